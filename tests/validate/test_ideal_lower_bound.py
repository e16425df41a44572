"""Foundation requirement: the `ideal` profile is a lower bound on the real A100 GEMM, attention
and fused-MoE measurements (aiconfigurator's vLLM and SGLang tables, Vidur's GEMMs). Rows measured
faster than the roofline are excluded only when L2 could explain them (validate/compare.py) and
are counted. On every measured GPU, the H100 runs included (every row, every implementation and
timing), at least 97 % of the calls take at least the ideal time."""

from __future__ import annotations

import pytest

from rooflens.validate.compare import join, summarize
from rooflens.validate.datasets import load_kernels, load_rooflens

OPS = ("gemm", "attention_prefill", "attention_decode", "moe")


@pytest.fixture(scope="module")
def joined(measured_dir):
    table = load_kernels(measured_dir)
    table = table[table["op"].isin(OPS) & (table["gpu"] == "a100-sxm-80gb")]
    return join(table, ("ideal",))


def test_ideal_never_exceeds_a_real_a100_kernel(joined):
    summary = summarize(joined, ("op", "impl"), ("ideal",))
    print("\nideal lower bound on A100 (aiconfigurator and Vidur):")
    print(summary[["op", "impl", "rows", "excluded_cache", "ideal_under_share"]].to_string())
    assert len(joined) > 100_000
    assert joined["ideal_under"].mean() <= 1e-3
    assert joined["cache_effect"].sum() <= 0.01 * len(joined)


def test_no_row_beats_the_compute_peak(joined):
    # Caches cannot explain beating the tensor-core peak: no such row may exist.
    achieved = joined["flops"] / joined["measured_s"]
    assert (achieved <= 312e12).all()
    assert achieved.max() > 0.9 * 312e12  # and the best cuBLAS GEMMs come close to it


AT_OR_ABOVE = 0.97  # share of measured calls the ideal profile may not exceed (issue 11)


def _share_at_or_above_ideal(table):
    joined = join(table, ("ideal",))
    return (joined["measured_s"] >= joined["predicted_ideal_s"]).groupby(joined["gpu"]).mean()


def test_ideal_is_below_97_percent_of_calls_on_every_measured_gpu(measured_dir):
    share = _share_at_or_above_ideal(load_kernels(measured_dir))
    print("\nshare of calls at or above the ideal:", share.round(4).to_dict())
    assert set(share.index) == {"a100-sxm-80gb", "a40", "h100-sxm"}
    assert (share >= AT_OR_ABOVE).all()


def test_ideal_is_below_every_h100_run_including_our_triton_kernels(measured_dir):
    runs = load_rooflens(measured_dir)  # all 894 rows: Triton kernels, do_bench timings too
    joined = join(runs, ("ideal",))
    assert len(joined) == len(runs) and set(joined["impl"].str.split(":").str[0]) == {
        "torch", "triton"}  # fmt: skip
    assert (joined["measured_s"] >= joined["predicted_ideal_s"]).mean() >= AT_OR_ABOVE
