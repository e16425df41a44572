"""The runner's GPU path (do_bench, input rotation, CUDA graphs). Skips without a CUDA GPU;
run on the validator's GPU machine."""

from __future__ import annotations

import pandas as pd
import pytest

from validate.runner import GRAPH_BELOW_S, run_suite
from validate.suite import gpu_quick_suite

pytestmark = pytest.mark.gpu


def test_tiny_calls_are_timed_in_a_cuda_graph_and_large_ones_with_do_bench():
    rows = pd.DataFrame([
        {"op": "gemm", "kernel": "gemm", "m": 1, "n": 256, "k": 256, "dtype": "bf16"},
        {"op": "gemm", "kernel": "gemm", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"},
    ])  # fmt: skip
    out = run_suite(rows, "cuda", ("torch",), cache_bytes=40 * 2**20)
    small, large = out.iloc[0], out.iloc[1]
    assert small["timing"] == "cuda_graph" and small["measured_s"] < GRAPH_BELOW_S
    assert large["timing"] == "do_bench"
    assert large["q20_s"] <= large["measured_s"] <= large["q80_s"]
    # 137 GFLOP in well under a second and no faster than 2 PFLOP/s: sane units.
    assert 2 * 4096**3 / 2e15 < large["measured_s"] < 1.0
    assert small["copies"] > 1  # rotation: 256 KiB of inputs needs copies to beat the L2


def test_every_kernel_of_the_quick_suite_runs_with_its_baseline():
    suite = gpu_quick_suite().groupby("kernel").head(1)
    out = run_suite(suite, "cuda", ("triton", "torch"), cache_bytes=40 * 2**20)
    assert set(out["impl"].str.split(":").str[0]) == {"triton", "torch"}
    assert (out["measured_s"] > 0).all()
