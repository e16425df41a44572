"""The runner's GPU path (CUDA graphs for every call, do_bench fallback, input rotation, eager
launch-inclusive time). Skips without a CUDA GPU; run on the validator's GPU machine."""

from __future__ import annotations

import pandas as pd
import pytest

from rooflens.validate.runner import run_suite, time_gpu
from rooflens.validate.suite import gpu_quick_suite

pytestmark = pytest.mark.gpu


def test_small_and_large_calls_are_both_timed_in_a_cuda_graph():
    rows = pd.DataFrame([
        {"op": "gemm", "kernel": "gemm", "m": 1, "n": 256, "k": 256, "dtype": "bf16"},
        {"op": "gemm", "kernel": "gemm", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"},
    ])  # fmt: skip
    out = run_suite(rows, "cuda", ("torch",), cache_bytes=40 * 2**20)
    small, large = out.iloc[0], out.iloc[1]
    assert (out["timing"] == "cuda_graph").all()
    assert large["q20_s"] <= large["measured_s"] <= large["q80_s"]
    # 137 GFLOP in well under a second and no faster than 2 PFLOP/s: sane units.
    assert 2 * 4096**3 / 2e15 < large["measured_s"] < 1.0
    assert small["copies"] > 1  # rotation: 256 KiB of inputs needs copies to beat the L2
    # A tiny call's eager time carries the Python launch (a few us); a graph replay does not.
    assert small["eager_s"] > small["measured_s"]
    # A large call hides its launch: eager and graph agree within 15 %.
    assert large["eager_s"] == pytest.approx(large["measured_s"], rel=0.15)


def test_a_call_that_syncs_with_the_host_falls_back_to_do_bench():
    import torch

    x = torch.randn(1 << 20, device="cuda")
    out = time_gpu([lambda: x.sum().item()])  # .item() cannot be captured in a graph
    assert str(out["timing"]).startswith("do_bench_fallback: ")
    assert 0 < out["measured_s"] < 1e-2 and out["eager_s"] > 0


def test_every_kernel_of_the_quick_suite_runs_with_its_baseline():
    suite = gpu_quick_suite().groupby("kernel").head(1)
    out = run_suite(suite, "cuda", ("triton", "torch"), cache_bytes=40 * 2**20)
    assert set(out["impl"].str.split(":").str[0]) == {"triton", "torch"}
    assert (out["measured_s"] > 0).all()
    # every kernel of the suite captures: a fallback would put launch cost into calibration
    assert (out["timing"] == "cuda_graph").all(), out.loc[out["timing"] != "cuda_graph", "timing"]
