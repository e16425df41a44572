"""Foundation requirement: the `ideal` profile is a lower bound on the real A100 GEMM, attention
and fused-MoE measurements (aiconfigurator's vLLM and SGLang tables, Vidur's GEMMs). Rows measured
faster than the roofline are excluded only when L2 could explain them (validate/compare.py) and
are counted."""

from __future__ import annotations

import pytest

from validate.compare import join, summarize
from validate.datasets import load_kernels

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
