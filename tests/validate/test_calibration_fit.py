"""The fit recovers known terms from synthetic measurements priced by those terms, and a
written calibration file loads back as the same profile."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import COPY_FRACTION, KindEfficiency, Profile
from rooflens.model.pricing.kernel_table import predict_frame
from rooflens.validate.calibrate import fit_kind
from rooflens.validate.fit_terms import kind_rows
from rooflens.validate.profile_fit import fit_profile, write_profile

TRUE = KindEfficiency(
    compute_fraction=0.7,
    memory_fraction=0.8,
    overhead_cycles=5640.0,  # 4 us at the A100's 1.41 GHz
    overlap_power=2.0,
    wave_latency_s=1e-6,
    wave_tail=0.1,  # GEMMs have no occupancy term (validate/fit_terms.py terms_for)
)


def _synthetic(gpu_id: str, eff: KindEfficiency, noise: float = 0.0) -> pd.DataFrame:
    sizes = (1, 16, 128, 1024, 8192)
    widths = (256, 2048, 8192, 28672)
    rows = [{"op": "gemm", "m": m, "n": n, "k": k, "dtype": "bf16"}
            for m, n, k in itertools.product(sizes, widths, widths)]  # fmt: skip
    table = pd.DataFrame(rows)
    profile = Profile(name="truth", kinds={"gemm": eff}, source="test")
    table["measured_s"] = predict_frame(table, get_gpu(gpu_id), profile)["predicted_s"]
    rng = np.random.default_rng(0)
    table["measured_s"] *= np.exp(noise * rng.standard_normal(len(table)))
    return table.assign(gpu=gpu_id, impl="synthetic", source="test")


def test_recovers_the_terms_that_made_the_data():
    eff, stats = fit_kind(_synthetic("a100-sxm-80gb", TRUE), "gemm", max_evals=3000)
    assert stats["median_abs_error"] < 0.01
    assert eff.compute_fraction == pytest.approx(0.7, rel=0.05)
    assert eff.memory_fraction == pytest.approx(0.8, rel=0.05)
    assert eff.overhead_cycles == pytest.approx(5640.0, rel=0.15)


def test_rows_that_state_no_replay_copies_hold_the_l2_rate_at_zero():
    # a table that does not say how its harness replayed a call (a user's, Vidur's eager rows)
    # leaves the L2 rate nothing to price: it is not searched, and stays off
    eff, _ = fit_kind(_synthetic("rtx-pro-6000", TRUE), "gemm", max_evals=400)
    assert eff.l2_bytes_per_sm_cycle == 0.0


def test_pooled_fit_uses_each_gpus_own_datasheet():
    # The same efficiency on two GPUs with different peaks: one pooled fit explains both.
    table = pd.concat([_synthetic("a100-sxm-80gb", TRUE, 0.02), _synthetic("h100-sxm", TRUE, 0.02)])
    eff, stats = fit_kind(table, "gemm", max_evals=2500)
    assert stats["median_abs_error"] < 0.03
    assert eff.compute_fraction == pytest.approx(0.7, rel=0.08)


def test_rows_faster_than_the_roofline_are_left_out():
    table = _synthetic("a100-sxm-80gb", TRUE)
    table.loc[table.index[:5], "measured_s"] = 1e-9  # impossible: faster than any roofline
    _, stats = fit_kind(table, "gemm", max_evals=300)
    assert stats["excluded_faster_than_peak"] == 5


def test_attention_rows_split_by_new_tokens():
    table = pd.DataFrame({"op": ["attention_prefill", "attention_prefill", "attention_decode"],
                          "seq_len": [1, 512, None]})  # fmt: skip
    assert list(kind_rows(table, "attention")) == [False, True, False]
    assert list(kind_rows(table, "attention_decode")) == [True, False, True]


def test_written_profile_loads_back(tmp_path):
    profile = fit_profile(_synthetic("a100-sxm-80gb", TRUE), "a100-sxm-80gb", max_evals=200)
    path = write_profile(profile, tmp_path / "a100-sxm-80gb.yaml")
    from rooflens.hardware.presets import read_data_file

    loaded = Profile.model_validate(read_data_file(path))
    assert loaded.kinds == profile.kinds
    assert loaded.provenance["fit"]["gemm"]["rows"] == 80
    assert "default" in loaded.kinds


def _eager_act(gpu_id: str, eff: KindEfficiency) -> pd.DataFrame:
    """Vidur-like eager SiLU-and-mul calls over five decades of size, timed as `eff` prices."""
    n = np.unique(np.geomspace(1e3, 1e8, 40).astype(int)).astype(float)
    table = pd.DataFrame({"op": "elementwise", "elements_read": 2 * n, "elements_written": n,
                          "dtype": "fp16", "eager": 1})  # fmt: skip
    truth = Profile(name="truth", kinds={"elementwise": eff}, source="test")
    table["measured_s"] = predict_frame(table, get_gpu(gpu_id), truth)["predicted_s"]
    return table.assign(gpu=gpu_id, impl="vidur:eager", source="test")


def test_one_gpus_eager_rows_go_to_the_sm_side_roof():
    # The A40's eager activation at 0.54 TB/s (0.78 of its 0.696 TB/s) is explained as well by
    # an HBM fraction of 0.78 as by a per-thread roof: the fit keeps a device copy's fraction
    # and puts the roof where the rows are, 0.54e12 / (84 SMs x 1536 threads) per second.
    rows = _eager_act("a40", KindEfficiency(memory_fraction=0.78, overhead_s=2e-6))
    eff, stats = fit_kind(rows, "elementwise")
    assert stats["median_abs_error"] < 0.005
    assert eff.memory_fraction == COPY_FRACTION
    assert eff.bytes_per_thread_us == pytest.approx(0.78 * 696e9 / (84 * 1536) / 1e6, rel=0.01)


def test_rows_that_say_hbm_bound_keep_their_hbm_fraction():
    # Both GPUs at half their HBM: one fraction explains both, no per-thread roof can (their
    # resident threads are 1.71x apart, their HBM 2.93x), so the copy default gives way.
    half = KindEfficiency(memory_fraction=0.5, overhead_s=2e-6)
    table = pd.concat([_eager_act("a40", half), _eager_act("a100-sxm-80gb", half)])
    eff, stats = fit_kind(table, "elementwise")
    assert stats["median_abs_error"] < 0.01
    assert eff.memory_fraction == pytest.approx(0.5, rel=0.02)


DECODE_TRUE = KindEfficiency(compute_fraction=0.3, memory_fraction=0.85, overhead_cycles=6000.0,
                             overlap_power=1.5, wave_latency_cycles=3000.0,
                             saturation_blocks_per_sm=0.5)  # fmt: skip


def _decode_rows(eff: KindEfficiency, impl: str) -> pd.DataFrame:
    rows = [{"op": "attention_decode", "batch": b, "kv_len": kv, "n_heads": 32, "n_kv_heads": 8,
             "head_dim": 128, "dtype": "bf16", "kv_dtype": "bf16"}
            for b, kv in itertools.product((1, 8, 64, 256), (512, 4096, 32768))]  # fmt: skip
    table = pd.DataFrame(rows)
    profile = Profile(name="truth", kinds={"attention_decode": eff}, source="test")
    table["measured_s"] = predict_frame(table, get_gpu("h100-sxm"), profile)["predicted_s"]
    return table.assign(gpu="h100-sxm", impl=impl, source="test")


def test_an_engines_attention_is_fitted_on_its_default_kernel_alone():
    # the kernel it measured most is what the engine runs; a backend it also measured (here
    # 2x slower, as SGLang's Triton backend is beside FlashInfer) does not pull its terms
    rows = pd.concat([_decode_rows(DECODE_TRUE, "e-1:default"),
                      _decode_rows(DECODE_TRUE, "e-1:other").head(5).assign(
                          measured_s=lambda t: 2 * t["measured_s"])])  # fmt: skip
    off = DECODE_TRUE.model_copy(update={"memory_fraction": 0.4})  # the pooled start
    own, stats = fit_kind(rows, "attention_decode", 400, off, one_engine=True)
    assert stats["rows_by_gpu_impl"] == {"h100-sxm/e-1:default": 12}
    assert stats["median_abs_error"] < 0.02
    assert own.memory_fraction == pytest.approx(0.85, rel=0.1)


def _fp8_rows(gpu_id: str, eff: KindEfficiency) -> pd.DataFrame:
    sizes = (1, 128, 2048, 8192)
    widths = (2048, 8192, 28672)
    rows = [{"op": "gemm", "m": m, "n": n, "k": k, "dtype": "fp8", "weight_dtype": "fp8",
             "quant": "fp8"} for m, n, k in itertools.product(sizes, widths, widths)]  # fmt: skip
    table = pd.DataFrame(rows)
    profile = Profile(name="truth", kinds={"gemm:fp8": eff}, source="test")
    table["measured_s"] = predict_frame(table, get_gpu(gpu_id), profile)["predicted_s"]
    return table.assign(gpu=gpu_id, impl="synthetic", source="test")


def test_the_sm_side_work_is_told_apart_from_the_fraction_over_gpus():
    # FP8 rows made with SM-side work in series with the MMAs, on three GPUs whose SMs issue
    # 2,066 to 15,356 FP8 FLOP per cycle: the pooled fit tells the two apart and prices all three
    truth = TRUE.model_copy(update={"compute_fraction": 0.9, "flops_per_sm_cycle": 20000.0})
    gpus = ("rtx-pro-6000", "h100-sxm", "b300")
    table = pd.concat([_fp8_rows(g, truth) for g in gpus], ignore_index=True)
    eff, stats = fit_kind(table, "gemm:fp8", max_evals=3000)
    assert stats["median_abs_error"] < 0.02
    assert eff.flops_per_sm_cycle == pytest.approx(20000.0, rel=0.25)
    # one GPU's rows cannot tell them apart: the fraction alone prices them, as well
    one, stats = fit_kind(_fp8_rows("h100-sxm", truth), "gemm:fp8", max_evals=3000)
    assert one.flops_per_sm_cycle == 0.0
    assert stats["median_abs_error"] < 0.02


def test_a_serialized_amax_is_told_apart_from_the_pass_bytes():
    # W8A8 rows whose input pass pays 13 cycles a row beside 5 bytes an element (vLLM's
    # per-tensor amax): narrow GEMMs at large m show the rows, wide k the bytes. One GPU's fit
    # recovers both and prices the rows as well
    truth = TRUE.model_copy(update={"input_pass_bytes": 5.0, "input_pass_row_cycles": 13.0})
    sizes, widths = (1, 64, 1024, 4096, 16384), (32, 512, 4096, 16384)
    rows = [{"op": "gemm", "m": m, "n": n, "k": k, "dtype": "fp8", "weight_dtype": "fp8",
             "quant": "fp8"} for m, n, k in itertools.product(sizes, widths, widths)]  # fmt: skip
    table = pd.DataFrame(rows)
    profile = Profile(name="truth", kinds={"gemm:fp8": truth}, source="test")
    table["measured_s"] = predict_frame(table, get_gpu("h100-sxm"), profile)["predicted_s"]
    table = table.assign(gpu="h100-sxm", impl="synthetic", source="test")
    eff, stats = fit_kind(table, "gemm:fp8", max_evals=3000)
    assert stats["median_abs_error"] < 0.02
    assert eff.input_pass_row_cycles == pytest.approx(13.0, rel=0.2)
    # without the term the same rows cannot be priced as well (the bytes cap at 5 an element)
    without = eff.model_copy(update={"input_pass_row_cycles": 0.0})
    narrow = table[(table["n"] == 32) & (table["k"] == 32) & (table["m"] == 16384)]
    priced = predict_frame(
        narrow, get_gpu("h100-sxm"), Profile(name="x", kinds={"gemm:fp8": without}, source="t")
    )
    assert float((narrow["measured_s"] / priced["predicted_s"]).min()) > 1.5


def test_the_l2_rate_is_recovered_from_resident_rows():
    # RTX PRO 6000 GEMMs timed over 6 weight copies: the copies of the narrower shapes fit in its
    # 128 MiB of L2 and stream at 5 B per SM cycle (2.3 TB/s), the wider ones from GDDR7
    truth = TRUE.model_copy(update={"l2_bytes_per_sm_cycle": 5.0})
    table = _synthetic("rtx-pro-6000", truth).drop(columns="measured_s")
    table["replay_copies"] = 6.0
    profile = Profile(name="truth", kinds={"gemm": truth}, source="test")
    table["measured_s"] = predict_frame(table, get_gpu("rtx-pro-6000"), profile)["predicted_s"]
    eff, stats = fit_kind(table, "gemm", max_evals=3000)
    assert stats["median_abs_error"] < 0.01
    assert eff.l2_bytes_per_sm_cycle == pytest.approx(5.0, rel=0.2)


@pytest.mark.parametrize("vllm_gpu", ["h100-sxm", "rtx-pro-6000"])
def test_a_pooled_fit_drops_an_engines_one_gpu_terms_only_where_no_other_gpu_measured_the_family(
    vllm_gpu: str,
):
    # TensorRT-LLM's FP8 GEMMs (2x slower) measured on the H100 alone, vLLM's on one GPU too.
    # Where vLLM's are the H100's as well, the family is that one GPU's: pooled, both engines run
    # at its terms (one SM design's kernels describe no other GPU). Where vLLM's are the RTX PRO
    # 6000's, the family's terms would mix another engine's kernel on another GPU: each engine
    # keeps its own. The H100's own file keeps TensorRT-LLM's either way.
    slow = TRUE.model_copy(update={"compute_fraction": 0.35, "memory_fraction": 0.4})
    table = pd.concat(
        [
            _fp8_rows(vllm_gpu, TRUE).assign(impl="vllm-0.24.0:cutlass"),
            _fp8_rows("h100-sxm", slow).assign(impl="trtllm-1.3.0:torch_flow"),
        ],
        ignore_index=True,
    )
    pooled = fit_profile(table, None, max_evals=200)
    assert "gemm:fp8" in pooled.kinds
    if vllm_gpu == "h100-sxm":
        assert "gemm:fp8" not in pooled.engines.get("vllm", {})
        assert "gemm:fp8" not in pooled.engines.get("trtllm", {})
    else:
        assert pooled.engines["trtllm"]["gemm:fp8"].compute_fraction < 0.6
        assert pooled.engines["vllm"]["gemm:fp8"].compute_fraction > 0.6
    own = fit_profile(table, "h100-sxm", max_evals=200)
    assert own.engines["trtllm"]["gemm:fp8"].compute_fraction < 0.6


def _one_row_rows(gpu_id: str, impl: str, extra_s: float, every: int = 1) -> pd.DataFrame:
    # synthetic FP8 GEMMs at m = 1, 2, 64 over 30 shapes; every `every`-th shape's m = 1 call
    # pays extra_s on top of the truth
    shapes = list(
        itertools.product((512, 2048, 4096, 8192, 14336, 28672), (512, 1024, 2048, 4096, 8192))
    )
    rows = [{"op": "gemm", "m": m, "n": n, "k": k, "dtype": "fp8", "weight_dtype": "fp8",
             "quant": "fp8"} for n, k in shapes for m in (1, 2, 64)]  # fmt: skip
    table = pd.DataFrame(rows)
    profile = Profile(name="truth", kinds={"gemm:fp8": TRUE}, source="test")
    table["measured_s"] = predict_frame(table, get_gpu(gpu_id), profile)["predicted_s"]
    shape = table.groupby(["n", "k"]).ngroup()
    table.loc[table["m"].eq(1) & shape.mod(every).eq(0), "measured_s"] += extra_s
    return table.assign(gpu=gpu_id, impl=impl, source="test")


def test_an_engines_m1_path_is_measured_where_nine_shapes_in_ten_show_it():
    # vLLM's FP8 GEMMs +13 us at m = 1 on every shape: the fit prices it in cycles at the GPU's
    # clock; SGLang's +13 us on every second shape only (noise, a kernel switch on some shapes):
    # no term
    gpu = get_gpu("b300")
    clock = float(gpu.boost_clock_hz or 0)
    vllm = _one_row_rows("b300", "vllm-0.24.0:cutlass", 13e-6)
    eff, _ = fit_kind(vllm, "gemm:fp8", max_evals=200)
    assert eff.single_row_cycles == pytest.approx(13e-6 * clock, rel=0.01)
    sglang = _one_row_rows("b300", "sglang-0.5.14:sgl", 13e-6, every=2)
    assert fit_kind(sglang, "gemm:fp8", max_evals=200)[0].single_row_cycles == 0.0
    # pooled over both engines, half the shapes: no term; the engine's own fit keeps vLLM's
    pooled = fit_profile(pd.concat([vllm, sglang], ignore_index=True), "b300", max_evals=200)
    assert pooled.kinds["gemm:fp8"].single_row_cycles == 0.0
    assert pooled.engines["vllm"]["gemm:fp8"].single_row_cycles == pytest.approx(
        13e-6 * clock, rel=0.01
    )
    assert pooled.engines["sglang"]["gemm:fp8"].single_row_cycles == 0.0


def test_a_pooled_fit_keeps_no_engines_decode_attention_and_a_gpus_own_fit_keeps_each():
    # An engine picks its decode kernel per SM design (profile_fit.py POOLED_ONLY_KINDS): its
    # terms pooled over GPUs describe kernels another GPU does not run, so generic.yaml and a
    # held-out fold price every engine's decode at the frontier's terms. A GPU's own file keeps
    # each engine's (here SGLang's backend streams the cache at half vLLM's rate).
    slow = DECODE_TRUE.model_copy(update={"memory_fraction": 0.425})
    table = pd.concat([_decode_rows(DECODE_TRUE, "vllm-0.24.0:vllm_flash_attn_fa3"),
                       _decode_rows(slow, "sglang-0.5.14:flashinfer")],
                      ignore_index=True)  # fmt: skip
    pooled = fit_profile(table, None, max_evals=300)
    assert pooled.kinds["attention_decode"].memory_fraction == pytest.approx(0.85, rel=0.1)
    assert all("attention_decode" not in kinds for kinds in pooled.engines.values())
    own = fit_profile(table, "h100-sxm", max_evals=300)
    assert own.engines["sglang"]["attention_decode"].memory_fraction == pytest.approx(
        0.425, rel=0.15
    )
    assert own.engines["vllm"]["attention_decode"].memory_fraction == pytest.approx(0.85, rel=0.1)
