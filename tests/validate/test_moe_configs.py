"""The tuned / untuned kernel-config subsets of the fused-MoE measurements: labels follow vLLM's
config naming (E per GPU, N = inter_size / moe_tp_size), the measured times corroborate the
list taken from vLLM's repository, the `moe` kind is fitted on the tuned subset only, and
`summarize(..., subsets=True)` reports each subset apart."""

from __future__ import annotations

import pandas as pd
import pytest

from rooflens.hardware.presets import get_gpu, read_data_file
from rooflens.hardware.profiles import KindEfficiency, Profile, calibration_path
from rooflens.model.pricing.kernel_table import predict_frame
from rooflens.validate.aiconfigurator import load_moe
from rooflens.validate.calibrate import fit_kind
from rooflens.validate.compare import join, summarize
from rooflens.validate.datasets import load_moe_kernels
from rooflens.validate.moe_configs import TUNED, UNTUNED, config_labels, tuned_configs
from rooflens.validate.moe_routing import with_routing

A100 = "a100-sxm-80gb"
IMPL = tuned_configs()[A100]["impl"]


def _row(E: int, inter: int, tp: int, ep: int = 1, tokens: int = 64, **cols: object) -> dict:
    return {"op": "moe", "num_tokens": tokens, "hidden_size": 4096, "inter_size": inter,
            "topk": 2, "num_experts": E, "moe_tp_size": tp, "moe_ep_size": ep, "dtype": "bf16",
            "gpu": A100, "impl": IMPL, **cols}  # fmt: skip


def test_labels_follow_vllms_config_file_key():
    rows = pd.DataFrame([
        _row(8, 14336, 2),  # Mixtral TP2: E=8,N=7168 ships for the A100
        _row(8, 14336, 1),  # N=14336: checked, no file
        _row(256, 2048, 1, ep=32),  # 8 experts per GPU, N=2048: the Mixtral-8x22B TP8 file
        _row(16, 14336, 2),  # E=16: never checked
        _row(8, 14336, 2, impl="sglang:fused_moe"),  # another implementation
        {"op": "gemm", "m": 1, "n": 1, "k": 1, "gpu": A100, "impl": IMPL},
    ])  # fmt: skip
    labels = config_labels(rows)
    assert labels[:3].tolist() == [TUNED, UNTUNED, TUNED]
    assert labels[3:].isna().all()


def _a100_vllm(rows: pd.DataFrame) -> pd.DataFrame:
    """The fused-MoE rows the tuned-config list covers: vLLM's fused_moe on the A100."""
    return rows[rows["gpu"].eq(A100) & rows["impl"].eq(IMPL)].reset_index(drop=True)


def test_every_compared_shape_is_established(measured_dir):
    every = load_moe_kernels(measured_dir)
    rows = _a100_vllm(every)
    assert rows["moe_config"].notna().all()
    assert every.loc[~every.index.isin(every.index[every["impl"].eq(IMPL)]),
                     "moe_config"].isna().all()  # no other engine is labelled  # fmt: skip
    per_shape = rows.groupby(["num_experts", "inter_size", "moe_tp_size"])["moe_config"].nunique()
    assert (per_shape == 1).all()
    tuned = rows[rows["moe_config"] == TUNED]
    pairs = set(zip(tuned["num_experts"], tuned["inter_size"] // tuned["moe_tp_size"],
                    strict=True))  # fmt: skip
    assert pairs == set(tuned_configs()[A100]["tuned"])  # every listed file was measured
    print(f"\nMoE rows (moe_ep_size 1): {len(rows)}; tuned {len(tuned)} rows over "
          f"{tuned.groupby(['num_experts', 'hidden_size', 'inter_size', 'moe_tp_size']).ngroups}"
          f" shapes; untuned {len(rows) - len(tuned)}")  # fmt: skip


def test_measured_times_corroborate_the_list(measured_dir):
    """Independent of the repository listing: at large token counts every tuned shape runs
    closer to the bf16 peak than any untuned one (median achieved fraction per shape)."""
    rows = _a100_vllm(load_moe_kernels(measured_dir))
    rows = rows[rows["num_tokens"] >= 4096].reset_index(drop=True)
    flops = predict_frame(rows, get_gpu(A100))["flops"].to_numpy()
    rows["fraction"] = flops / rows["measured_s"] / get_gpu(A100).peak("bf16")
    keys = ["moe_config", "num_experts", "hidden_size", "inter_size", "moe_tp_size"]
    per_shape = rows.groupby(keys)["fraction"].median()
    assert per_shape[TUNED].min() > per_shape[UNTUNED].max()


def _synthetic(eff: KindEfficiency, label: str) -> pd.DataFrame:
    shapes = [(8, 14336, 2), (8, 14336, 4), (8, 14336, 1), (128, 1536, 8)]
    tokens = (1, 8, 64, 512, 4096, 16384)
    table = pd.DataFrame([_row(E, inter, tp, tokens=n) for E, inter, tp in shapes
                          for n in tokens])  # fmt: skip
    profile = Profile(name="truth", kinds={"moe": eff}, source="test")
    table["measured_s"] = predict_frame(table, get_gpu(A100), profile)["predicted_s"]
    return table.assign(moe_config=label, source="test")


def test_moe_kind_is_fitted_on_the_tuned_rows_and_reports_both():
    tuned = KindEfficiency(compute_fraction=0.55, memory_fraction=0.8, overhead_s=20e-6,
                           overlap_power=1.5)  # fmt: skip
    slow = tuned.model_copy(update={"compute_fraction": 0.25, "memory_fraction": 0.4})
    table = pd.concat([_synthetic(tuned, TUNED), _synthetic(slow, UNTUNED)], ignore_index=True)
    eff, stats = fit_kind(table, "moe", max_evals=2500)
    assert stats["rows"] == (table["moe_config"] == TUNED).sum()
    assert eff.compute_fraction == pytest.approx(0.55, rel=0.05)
    assert eff.memory_fraction == pytest.approx(0.8, rel=0.05)
    by = stats["error_by_config"]
    assert by["tuned"]["median_abs_error"] < 0.01
    assert by["untuned"]["bias"] < -0.3  # the untuned rows run slower than the profile
    assert by["all"]["rows"] == len(table)


def test_subset_summary_matches_the_fit_record_and_ideal_bounds_every_row(measured_dir):
    """Two routes to the same numbers: compare's subset rows and the calibration file's own
    fit record (error_by_config); and neither profile prices a MoE call below the roofline."""
    # The file's `moe` kind (fitted on every engine's A100 rows, tuned ones where labelled),
    # not an engine's view of it: the record is that kind's.
    profile = Profile.model_validate(read_data_file(calibration_path(get_gpu(A100))))
    profile = profile.model_copy(update={"engines": {}})
    assert profile.gpu_id == A100  # the A100's own file, not generic.yaml
    rows = _a100_vllm(load_moe_kernels(measured_dir))
    summary = summarize(join(rows, ("ideal", profile)), ("gpu", "op"), subsets=True)
    summary = summary.set_index("op")
    record = profile.provenance["fit"]["moe"]["error_by_config"]
    for op, name in (("moe", "all"), ("moe/tuned", TUNED), ("moe/untuned", UNTUNED)):
        assert summary.loc[op, "rows"] == record[name]["rows"]
        assert summary.loc[op, "calibrated_median"] == pytest.approx(
            record[name]["median_abs_error"], abs=1e-4
        )
    moe = load_moe(measured_dir)  # expert-parallel rows included
    every = join(with_routing(_a100_vllm(moe)), ("ideal", profile))
    assert not every["below_ideal"].any()
    assert (every["predicted_calibrated_s"] >= every["predicted_ideal_s"]).all()


def test_subsets_off_is_the_plain_summary(measured_dir):
    joined = join(_a100_vllm(load_moe_kernels(measured_dir)).head(200), ("ideal",))
    plain = summarize(joined, ("gpu", "op"), ("ideal",))
    assert list(plain["op"]) == ["moe"]
    split = summarize(joined, ("gpu", "op"), ("ideal",), subsets=True)
    assert split[split["op"] == "moe"].reset_index(drop=True).equals(plain)
    parts = split[split["op"].isin(["moe/tuned", "moe/untuned"])]  # config subsets
    assert parts["rows"].sum() == plain["rows"].iloc[0]
    precision = split[split["op"] == "moe/bfloat16"]  # and the precision subset: all of them
    assert precision["rows"].sum() == plain["rows"].iloc[0]
