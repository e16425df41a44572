"""Foundation requirement: the `ideal` profile is a lower bound on the real A100 GEMM, attention
and fused-MoE measurements (aiconfigurator's vLLM, SGLang and TensorRT-LLM tables, Vidur's
GEMMs). Rows measured faster than the roofline are excluded only when L2 could explain them
(validate/compare.py) and are counted. On every measured GPU, the H100 runs included (every
row, every implementation and timing), at least 97 % of the calls take at least the ideal time
or are explained by the L2 (128 MB on the RTX PRO 6000, whose GDDR7 is 1.6 TB/s)."""

from __future__ import annotations

import pytest

from rooflens.hardware.presets import get_gpu
from rooflens.validate.compare import join, summarize
from rooflens.validate.datasets import load_kernels, load_rooflens

OPS = ("gemm", "attention_prefill", "attention_decode", "moe")


@pytest.fixture(scope="module")
def joined(measured_dir):
    table = load_kernels(measured_dir)
    table = table[table["op"].isin(OPS) & (table["gpu"] == "a100-sxm-80gb")]
    return join(table, ("ideal",))


# TensorRT-LLM 1.0's decode attention table on the A100 (`torch_flow`) has rows up to 1.7x
# faster than the HBM can stream their KV cache (batch 64, 8k-32k context; far past the 40 MB
# L2): not a kernel the roofline can bound. Counted and printed, held to its share today.
ARTEFACTS = {("attention_decode", "trtllm-1.0.0:torch_flow"): 0.06}


def test_ideal_never_exceeds_a_real_a100_kernel(joined):
    summary = summarize(joined, ("op", "impl"), ("ideal",))
    print("\nideal lower bound on A100 (aiconfigurator and Vidur):")
    print(summary[["op", "impl", "rows", "excluded_cache", "ideal_under_share"]].to_string())
    assert len(joined) > 100_000
    for row in summary.itertuples():
        assert row.ideal_under_share <= ARTEFACTS.get((row.op, row.impl), 1e-3), row
    clean = ~joined.set_index(["op", "impl"]).index.isin(list(ARTEFACTS))
    assert joined.loc[clean, "ideal_under"].mean() <= 1e-3
    assert joined["cache_effect"].sum() <= 0.01 * len(joined)


def test_no_row_beats_the_compute_peak(joined):
    # Caches cannot explain beating the tensor-core peak of the row's own unit (bf16 312 TFLOPS,
    # int8 624 TOPS for SmoothQuant): no such row may exist.
    peak = joined["compute_dtype"].map(get_gpu("a100-sxm-80gb").peak)
    achieved = joined["flops"] / joined["measured_s"]
    assert (achieved <= peak).all()
    bf16 = joined["compute_dtype"] == "bf16"
    assert achieved[bf16].max() > 0.9 * 312e12  # and the best cuBLAS GEMMs come close to it


AT_OR_ABOVE = 0.97  # share of measured calls the ideal profile may not exceed (issue 11)


def test_ideal_is_below_97_percent_of_calls_on_every_measured_gpu(measured_dir):
    joined = join(load_kernels(measured_dir), ("ideal",))
    at = joined["measured_s"] >= joined["predicted_ideal_s"]
    share = at.groupby(joined["gpu"]).mean()
    explained = (at | joined["cache_effect"]).groupby(joined["gpu"]).mean()
    unexplained = joined["ideal_under"].groupby(joined["gpu"]).mean()
    print("\nshare of calls at or above the ideal:", share.round(4).to_dict())
    print("... or explained by the L2:", explained.round(4).to_dict())
    assert set(share.index) == {"a100-sxm-80gb", "a40", "h100-sxm", "b300", "rtx-pro-6000"}
    assert (explained >= AT_OR_ABOVE).all()
    assert (unexplained <= 1 - AT_OR_ABOVE).all()
    assert (share.drop("rtx-pro-6000") >= AT_OR_ABOVE).all()  # HBM parts, L2 <= 126.5 MB


def test_ideal_is_below_every_h100_run_including_our_triton_kernels(measured_dir):
    runs = load_rooflens(measured_dir)  # all 894 rows: Triton kernels, do_bench timings too
    joined = join(runs, ("ideal",))
    assert len(joined) == len(runs) and set(joined["impl"].str.split(":").str[0]) == {
        "torch", "triton"}  # fmt: skip
    assert (joined["measured_s"] >= joined["predicted_ideal_s"]).mean() >= AT_OR_ABOVE
