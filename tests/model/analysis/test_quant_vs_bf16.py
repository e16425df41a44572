"""Quantized decode against bf16 (model/analysis/quant_vs_bf16.py): where a calibrated quantized
decode step costs more than bf16 on the same GPU and engine, the prediction names the measured
tables its kernel family was fitted on; the bf16 step is checked by a second route (a scenario
built with bf16 dtypes), the named table is read back to confirm it measures the slowdown, and
every table the calibration provenance can name exists in the shared measurements."""

from __future__ import annotations

import pandas as pd
import pytest

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import CALIBRATION_DIR, ENGINES, get_profile, load_calibration
from rooflens.io.units import fmt_time
from rooflens.model.analysis.quant_vs_bf16 import (
    MAX_DECODE_BATCH,
    MEASURED_FOLDERS,
    fitted_on,
    quant_slower_than_bf16,
)
from rooflens.model.predict.api import make_scenario, run
from rooflens.model.pricing.single_row import single_row_paths
from rooflens.validate.measured_files import DEFAULT_ROOT, DEVICE_IDS

needs_measured = pytest.mark.skipif(
    not DEFAULT_ROOT.is_dir(), reason=f"shared measurements not found at {DEFAULT_ROOT}"
)
B300_FP8 = {"engine": "trtllm", "batch": 1, "weight_dtype": "fp8", "act_dtype": "fp8",
            "profile": "calibrated"}  # fmt: skip


def test_fp8_on_b300_with_tensorrt_llm_names_its_fp8_gemm_table() -> None:
    pred = run(make_scenario("llama-3-8b", "b300", **B300_FP8))
    slower = quant_slower_than_bf16(pred)
    assert slower is not None
    # the bf16 twin, by a second route: the same request with 16-bit weights and activations
    bf16 = {**B300_FP8, "weight_dtype": "bf16", "act_dtype": "bf16", "kv_dtype": "fp8"}
    twin = run(make_scenario("llama-3-8b", "b300", **bf16))
    assert slower.bf16_tpot_s == pytest.approx(twin.tpot_s, rel=1e-12)
    assert slower.tpot_s == pred.tpot_s > twin.tpot_s
    assert slower.families == ("gemm:fp8",) and slower.named
    # the engine's own terms: TensorRT-LLM's rows only, not vLLM's or SGLang's
    assert [t.table for t in slower.tables] == [
        "aiconfigurator-b300/gemm/trtllm/1.3.0rc20/gemm_perf.parquet"
    ]
    assert slower.tables[0].dtype == "fp8" and slower.tables[0].calibration == "b300.yaml"
    assert "aiconfigurator-b300/gemm/trtllm/1.3.0rc20/gemm_perf.parquet" in slower.note


@needs_measured
def test_the_named_table_measures_fp8_slower_than_bf16_at_small_batch() -> None:
    pred = run(make_scenario("llama-3-8b", "b300", **B300_FP8))
    slower = quant_slower_than_bf16(pred)
    assert slower is not None
    table = slower.tables[0]
    d = pd.read_parquet(DEFAULT_ROOT / table.table)
    d = d[(d["m"] <= MAX_DECODE_BATCH) & (d["kernel_source"] == table.kernel_source)]
    by_shape = d.pivot_table(index=["m", "n", "k"], columns="gemm_dtype", values="latency")
    ratio = (by_shape[table.dtype] / by_shape["bfloat16"]).dropna()
    assert len(ratio) > 100 and ratio.median() > 1.0  # what the table says, in its own rows


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200"])
@pytest.mark.parametrize("weight, act", [("int4", "bf16"), ("int8", "bf16"), ("fp8", "fp8")])
def test_where_quantization_pays_no_line_is_printed(weight: str, act: str, gpu: str) -> None:
    # W8A16 among them: it read above bf16 here while SGLang's W8A8 chain, labelled int8_wo,
    # priced it (validate/aiconfigurator.py LEFT_OUT)
    fields = {"batch": 1, "profile": "calibrated", "engine": "vllm"}
    pred = run(make_scenario("llama-3-8b", gpu, weight_dtype=weight, act_dtype=act,
                             **fields))  # fmt: skip
    bf16 = run(make_scenario("llama-3-8b", gpu, weight_dtype="bf16", act_dtype="bf16",
                             kv_dtype=pred.scenario.precision.kv_dtype, **fields))  # fmt: skip
    assert pred.tpot_s < bf16.tpot_s  # the premise, by a second route
    assert quant_slower_than_bf16(pred) is None


def test_checked_only_for_a_quantized_calibrated_decode_at_small_batch() -> None:
    slow = run(make_scenario("llama-3-8b", "b300", **B300_FP8))
    assert quant_slower_than_bf16(slow) is not None
    big = run(make_scenario("llama-3-8b", "b300", **{**B300_FP8, "batch": MAX_DECODE_BATCH + 1}))
    assert quant_slower_than_bf16(big) is None
    ideal = run(make_scenario("llama-3-8b", "b300", **{**B300_FP8, "profile": "ideal"}))
    assert quant_slower_than_bf16(ideal) is None  # not checked for the faces
    # under ideal on request: fp8 halves the weight reads, so it is never slower there
    assert quant_slower_than_bf16(ideal, profiles=("ideal",)) is None
    bf16 = run(make_scenario("llama-3-8b", "b300", **{**B300_FP8, "weight_dtype": "bf16",
                                                      "act_dtype": "bf16"}))  # fmt: skip
    assert quant_slower_than_bf16(bf16) is None


@pytest.mark.parametrize("dtype", ["int4_wo", "int8_wo"])
def test_pooled_terms_inherited_from_generic_name_every_engine_s_table(dtype: str) -> None:
    # h100-sxm has no weight-only GEMM of its own: its terms come from generic.yaml, fitted on
    # the only dense weight-only table there is (TensorRT-LLM 1.0 on the A100)
    h100 = CALIBRATION_DIR / "h100-sxm.yaml"
    tables = fitted_on(h100, "vllm", f"gemm:{dtype}")
    assert [t.table for t in tables] == ["aiconfigurator-a100/gemm/trtllm/1.0.0/gemm_perf.parquet"]
    assert tables[0].calibration == "generic.yaml" and tables[0].dtype == dtype
    assert fitted_on(h100, "vllm", "no-such-kind") == []


def _every_named_table() -> list:
    out = []
    for path in sorted(CALIBRATION_DIR.glob("*.yaml")):
        if path.stem.startswith("comm-"):  # link fits, not profiles (model/pricing/comm.py)
            continue
        fit = load_calibration(path).provenance.get("fit", {})
        for engine in ENGINES:
            for key in fit:
                out += fitted_on(path, engine, key) if key.split(":")[0] in ("gemm", "moe") else []
    return out


@needs_measured
def test_every_table_the_provenance_names_exists_with_its_kernel_and_dtype() -> None:
    tables = _every_named_table()
    assert tables
    for folder in set(MEASURED_FOLDERS.values()):
        assert (DEFAULT_ROOT / folder).is_dir(), folder
    columns: dict[str, pd.DataFrame] = {}
    for t in tables:
        if t.table not in columns:
            dtype = "gemm_dtype" if "/gemm/" in t.table else "moe_dtype"
            (path,) = DEFAULT_ROOT.glob(t.table)  # one file (a dev build's folder is a wildcard)
            d = pd.read_parquet(path, columns=[dtype, "kernel_source", "device", "version"])
            columns[t.table] = d.rename(columns={dtype: "dtype"}).drop_duplicates()
        d = columns[t.table]
        gpu = t.table.split("/")[0]
        # the folder holds the GPU MEASURED_FOLDERS says (validate/measured_files.py DEVICE_IDS)
        assert {MEASURED_FOLDERS[DEVICE_IDS[v]] for v in d["device"]} == {gpu}, t
        mine = (d["dtype"] == t.dtype) & (d["kernel_source"] == t.kernel_source)
        assert (mine & (d["version"] == t.version)).any(), t


def test_vllm_fp8_on_b300_at_batch_1_names_its_m1_path() -> None:
    # vLLM's CUTLASS FP8 GEMM at m = 1 on the B300 runs a path of its own
    # (validate/single_row_fit.py): slower than bf16, named with its table, and the prediction
    # says what the path costs a call (the fitted cycles at the clock) and a step
    fields = {**B300_FP8, "engine": "vllm"}
    pred = run(make_scenario("llama-3-8b", "b300", **fields))
    slower = quant_slower_than_bf16(pred)
    assert slower is not None and slower.families == ("gemm:fp8",)
    assert "aiconfigurator-b300/gemm/vllm/0.24.0/gemm_perf.parquet" in slower.note
    cycles = load_calibration(CALIBRATION_DIR / "b300.yaml").engines["vllm"]["gemm:fp8"]
    expected = cycles.single_row_cycles / float(get_gpu("b300").boost_clock_hz or 0)
    assert expected > 10e-6
    profile = get_profile("calibrated", get_gpu("b300"), "vllm")
    paths = single_row_paths([p.op for p in pred.decode.priced], profile, get_gpu("b300"))
    assert paths == {"gemm:fp8": (pytest.approx(expected, rel=1e-9), 128.0)}  # 4 GEMMs x 32
    (note,) = [n for n in pred.notes if "m = 1 path" in n]
    assert f"+{fmt_time(expected)} a call, 128 calls a decode step" in note
    assert "vLLM's gemm:fp8" in note
    # at batch 2 the GEMMs run the m >= 2 kernel: fp8 pays again
    two = run(make_scenario("llama-3-8b", "b300", **{**fields, "batch": 2}))
    assert quant_slower_than_bf16(two) is None


@needs_measured
def test_the_b300_vllm_fp8_table_measures_its_m1_path() -> None:
    # the term's second route: the table itself, m = 1 against m = 2 on every shape
    d = pd.read_parquet(DEFAULT_ROOT / "aiconfigurator-b300/gemm/vllm/0.24.0/gemm_perf.parquet")
    d = d[d["gemm_dtype"].eq("fp8") & d["m"].isin((1, 2))]
    by_shape = d.pivot_table(index=["n", "k"], columns="m", values="latency")  # ms
    extra_s = ((by_shape[1] - by_shape[2]) * 1e-3).dropna()
    cycles = load_calibration(CALIBRATION_DIR / "b300.yaml").engines["vllm"]["gemm:fp8"]
    fitted_s = cycles.single_row_cycles / float(get_gpu("b300").boost_clock_hz or 0)
    assert len(extra_s) > 400 and extra_s.quantile(0.1) > 0
    assert fitted_s == pytest.approx(extra_s.median(), rel=0.02)


def test_the_schemes_that_beat_bf16_are_each_priced_by_a_second_route() -> None:
    # TensorRT-LLM's per-tensor FP8 on the B300 at batch 1 costs more than bf16 (above): every
    # other scheme and engine is tried, and each one named is the prediction a user gets by
    # asking for it (make_scenario with --quant and --engine), below the bf16 step
    pred = run(make_scenario("llama-3-8b", "b300", **{**B300_FP8, "kv_dtype": "bf16"}))
    slower = quant_slower_than_bf16(pred, alternatives=True)
    assert slower is not None and slower.alternatives
    assert quant_slower_than_bf16(pred).alternatives is None  # only searched when asked
    found = {(a.scheme, a.engine): a for a in slower.alternatives}
    assert [a.tpot_s for a in slower.alternatives] == sorted(found[k].tpot_s for k in found)
    fields = {k: v for k, v in B300_FP8.items() if k not in ("weight_dtype", "act_dtype")}
    assert "int8" not in get_gpu("b300").peak_flops_per_s  # no int8 tensor cores: no SmoothQuant
    for engine in ENGINES:
        for scheme in ("w8a8-fp8", "fp8-block", "w8a16", "w4a16", "nvfp4"):
            asked = run(make_scenario("llama-3-8b", "b300", **{**fields, "engine": engine,
                                                               "quant": scheme}))  # fmt: skip
            if asked.tpot_s < slower.bf16_tpot_s:
                assert found[scheme, engine].tpot_s == pytest.approx(asked.tpot_s, rel=1e-12)
            else:
                assert (scheme, engine) not in found
    assert not [a for a in slower.alternatives if a.scheme == "smoothquant"]
    assert ("w8a8-fp8", "trtllm") not in found  # the scenario itself
    # int4 weight-only GEMMs were measured on the A100 only (TensorRT-LLM 1.0): the line says
    # whose tables its terms are; block FP8 was measured on the B300 itself
    assert [t.table for t in fitted_on(CALIBRATION_DIR / "b300.yaml", "vllm", "gemm:int4_wo")] \
        == ["aiconfigurator-a100/gemm/trtllm/1.0.0/gemm_perf.parquet"]  # fmt: skip
    assert found["w4a16", "vllm"].carried_from == ("a100-sxm-80gb",)
    assert found["fp8-block", "trtllm"].carried_from == ()
    best = min(slower.alternatives, key=lambda a: a.tpot_s)
    assert f"Beats bf16 here, same KV and parallelism: {best.text}" in slower.note
    assert "(terms from a100-sxm-80gb tables)" in best.text  # W4A16's, carried


@needs_measured
def test_block_fp8_beats_bf16_for_mixtral_where_vllm_s_per_tensor_fp8_moe_does_not() -> None:
    # vLLM's per-tensor FP8 MoE on the H100 (ModelOpt's FlashInfer CUTLASS path) runs ~2x its
    # bf16 MoE at decode sizes, its block-FP8 MoE ~0.55x: the line names the block-FP8 way
    fields = {"tp": 8, "batch": 10, "prompt_len": 486, "output_len": 16, "engine": "vllm",
              "profile": "calibrated"}  # fmt: skip
    pred = run(make_scenario("mixtral-8x7b", "h100-sxm", quant="w8a8-fp8", **fields))
    slower = quant_slower_than_bf16(pred, alternatives=True)
    assert slower is not None and "moe:fp8" in slower.families
    block = run(make_scenario("mixtral-8x7b", "h100-sxm", quant="fp8-block", **fields))
    found = {(a.scheme, a.engine): a.tpot_s for a in slower.alternatives or ()}
    assert found["fp8-block", "vllm"] == pytest.approx(block.tpot_s, rel=1e-12)
    assert block.tpot_s < slower.bf16_tpot_s < slower.tpot_s
    # the table's own rows, Mixtral's expert shape split over 8 GPUs, at decode token counts
    d = pd.read_parquet(DEFAULT_ROOT / "aiconfigurator-h100/moe/vllm/0.24.0/moe_perf.parquet")
    d = d[
        (d["hidden_size"] == 4096)
        & (d["inter_size"] == 14336)
        & (d["num_experts"] == 8)
        & (d["topk"] == 2)
        & (d["moe_tp_size"] == 8)
        & (d["num_tokens"].between(8, 16))
    ]
    by = d.groupby("moe_dtype")["latency"].median()
    assert by["fp8"] > 1.5 * by["bfloat16"] and by["fp8_block"] < 0.7 * by["bfloat16"]
