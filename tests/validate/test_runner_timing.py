"""The runner's timing decision on CPU, with the device parts mocked: every call goes through a
CUDA graph unless it cannot be captured (then do_bench, with the reason in `timing`), and the
eager launch-inclusive time is its own column."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from rooflens.validate.runner import eager_per_call_s, run_suite, time_calls


class FakeDevice:
    """Records what the runner asks of the device; `bench` returns fixed quantiles."""

    def __init__(self, quantiles_s=(2e-6, 3e-6, 4e-6), fail: Exception | None = None):
        self.quantiles_s, self.fail = list(quantiles_s), fail
        self.captured, self.benched, self.syncs = [], [], 0

    def bench(self, fn):
        fn()
        self.benched.append(fn)
        return self.quantiles_s

    def capture(self, fn):
        if self.fail is not None:
            raise self.fail
        self.captured.append(fn)
        return fn

    def sync(self):
        self.syncs += 1


def counting_calls(n):
    counts = [0] * n

    def make(i):
        def call():
            counts[i] += 1

        return call

    return [make(i) for i in range(n)], counts


def test_every_call_is_graph_timed_and_the_replay_time_is_divided_by_the_copies():
    calls, counts = counting_calls(4)
    device = FakeDevice()
    out = time_calls(calls, device.bench, device.capture, device.sync)
    assert out["timing"] == "cuda_graph"
    # one replay runs the 4 copies once: per call = replay quantiles / 4
    assert out["measured_s"] == pytest.approx(3e-6 / 4)
    assert out["q20_s"] == pytest.approx(2e-6 / 4) and out["q80_s"] == pytest.approx(4e-6 / 4)
    assert len(device.captured) == 1
    before = list(counts)
    device.captured[0]()  # the captured function runs every copy exactly once (rotation)
    assert [b - a for a, b in zip(before, counts, strict=True)] == [1, 1, 1, 1]


def test_a_call_that_cannot_be_captured_falls_back_to_do_bench_and_says_why():
    calls, counts = counting_calls(3)
    error = RuntimeError("operation not permitted when stream is capturing\ntraceback detail")
    device = FakeDevice(fail=error)
    out = time_calls(calls, device.bench, device.capture, device.sync)
    assert out["timing"] == (
        "do_bench_fallback: RuntimeError: operation not permitted when stream is capturing"
    )
    # do_bench times one call at a time, rotating copies: no division by the copy count
    assert out["measured_s"] == pytest.approx(3e-6)
    before = list(counts)
    for _ in range(3):
        device.benched[0]()
    assert [b - a for a, b in zip(before, counts, strict=True)] == [1, 1, 1]


def test_eager_time_is_launch_inclusive_wall_time_per_call():
    delay_s = 2e-3
    calls = [lambda: time.sleep(delay_s)] * 3
    syncs = []
    eager = eager_per_call_s(calls, lambda: syncs.append(1), reps=3)
    assert delay_s <= eager < 10 * delay_s
    assert len(syncs) == 6  # before and after each round: the device's time is inside
    device = FakeDevice(quantiles_s=(1e-6, 1e-6, 1e-6))
    out = time_calls(calls, device.bench, device.capture, device.sync)
    # the graph figure (mocked: 1 us / 3) and the eager figure are separate columns
    assert out["measured_s"] == pytest.approx(1e-6 / 3) and out["eager_s"] >= delay_s


def test_cpu_results_carry_eager_and_describe_the_baseline_that_ran():
    rows = pd.DataFrame([
        {"op": "gemm", "kernel": "w8a16_gemm", "m": 4, "n": 32, "k": 128, "dtype": "fp32",
         "weight_dtype": "int8", "group_size": 64},
        {"op": "gemm", "kernel": "gemm", "m": 5, "n": 33, "k": 48, "dtype": "fp32",
         "weight_dtype": "fp32", "group_size": 128},
    ])  # fmt: skip
    out = run_suite(rows, "cpu", quick=True)
    assert {"measured_s", "q20_s", "q80_s", "timing", "eager_s", "copies"} <= set(out.columns)
    assert (out["eager_s"] == out["measured_s"]).all() and (out["timing"] == "perf_counter").all()
    # the torch baseline of a W8A16 kernel is a 32-bit torch.mm here: its row says so
    assert out.loc[0, "impl"] == "torch:mm"
    assert out.loc[0, "weight_dtype"] == "fp32" and np.isnan(out.loc[0, "group_size"])
