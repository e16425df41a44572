"""The runner on CPU: timing statistics, input rotation, and the Triton launchers and torch
baselines built from one suite row computing the same thing (kernels run in the interpreter)."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from rooflens.validate.cases import input_bytes, make_calls
from rooflens.validate.runner import copies_for, gpu_preset_for, run_suite, time_cpu

ROWS = [
    {"op": "gemm", "kernel": "gemm", "m": 5, "n": 33, "k": 48, "dtype": "fp32"},
    {"op": "attention_prefill", "kernel": "flash_attention", "batch": 1, "seq_len": 19,
     "n_heads": 4, "n_kv_heads": 2, "head_dim": 16, "dtype": "fp32"},
    {"op": "attention_decode", "kernel": "decode_attention", "batch": 2, "kv_len": 37,
     "n_heads": 4, "n_kv_heads": 1, "head_dim": 16, "dtype": "fp32"},
    {"op": "norm", "kernel": "rmsnorm", "rows": 3, "hidden": 40, "residual": 1, "dtype": "fp32"},
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS, ids=[r["kernel"] for r in ROWS])
def test_triton_kernel_and_torch_baseline_agree(row):
    series = pd.Series(row)
    torch.manual_seed(0)
    ours = make_calls(series, "triton", "cpu")[0]()
    torch.manual_seed(0)
    theirs = make_calls(series, "torch", "cpu")[0]()
    ours = ours[0] if isinstance(ours, tuple) else ours
    torch.testing.assert_close(ours.reshape(theirs.shape), theirs, rtol=1e-4, atol=1e-4)


def test_quantized_gemm_matches_the_16bit_baseline_within_quantization_error():
    row = pd.Series({"op": "gemm", "kernel": "w8a16_gemm", "m": 4, "n": 32, "k": 128,
                     "dtype": "fp16", "group_size": 64})  # fmt: skip
    torch.manual_seed(0)
    ours = make_calls(row, "triton", "cpu")[0]().float()
    torch.manual_seed(0)
    theirs = make_calls(row, "torch", "cpu")[0]().float()
    assert (ours - theirs).abs().max() < 0.05 * theirs.abs().max()


def test_rotation_uses_distinct_inputs_and_enough_copies():
    row = pd.Series(ROWS[0])
    calls = make_calls(row, "torch", "cpu", copies=3)
    outputs = [c().clone() for c in calls]
    assert not torch.equal(outputs[0], outputs[1])
    assert input_bytes(row) == (5 * 48 + 33 * 48) * 4
    big = pd.Series({"op": "gemm", "m": 1, "n": 4096, "k": 4096, "dtype": "fp32"})  # 64 MiB
    assert copies_for(big, cache_bytes=40 * 2**20, budget_bytes=1e12) == 3
    assert copies_for(big, cache_bytes=40 * 2**20, budget_bytes=1e8) == 1


def test_time_cpu_quantiles_are_ordered():
    stats = time_cpu([lambda: sum(range(2000))], min_time_s=0.01)
    assert 0 < stats["q20_s"] <= stats["measured_s"] <= stats["q80_s"]


def test_run_suite_on_cpu_times_only_the_torch_baselines():
    out = run_suite(pd.DataFrame(ROWS[:1]), "cpu", quick=True)
    assert list(out["impl"]) == ["torch:mm"] and out.loc[0, "measured_s"] > 0


def test_cuda_device_names_map_to_presets():
    assert gpu_preset_for("NVIDIA H100 80GB HBM3") == "h100-sxm"
    assert gpu_preset_for("NVIDIA A100-SXM4-80GB") == "a100-sxm-80gb"
    assert gpu_preset_for("NVIDIA L40S") == "l40s"
