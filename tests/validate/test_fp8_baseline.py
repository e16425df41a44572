"""The W8A8 FP8 GEMM baseline of the kernel suite (`with_fp8_gemm`, `torch._scaled_mm`): the
suite's 16-bit GEMM shapes again in FP8 on GPUs with FP8 tensor cores, so a lent GPU measures
the production FP8 GEMM beside cuBLAS bf16 (issue 23's largest unseen-GPU gap). Checked here on
the CPU, where torch runs `_scaled_mm` too: the call computes the FP8 product, no Triton kernel
is asked for, the rows are labelled and priced as FP8."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from rooflens.validate.cases import FP8, input_bytes, make_calls
from rooflens.validate.compare import join
from rooflens.validate.runner import collect_rows
from rooflens.validate.suite import gpu_quick_suite, with_fp8_gemm

ROW = pd.Series({"op": "gemm", "kernel": "fp8_gemm", "m": 32, "n": 64, "k": 128,
                 "dtype": "fp8", "weight_dtype": "fp8"})  # fmt: skip


def test_the_fp8_call_is_the_fp8_product_of_its_inputs():
    torch.manual_seed(0)
    (call,) = make_calls(ROW, "torch", "cpu", copies=1)
    x, w = call.__defaults__  # the call's own FP8 operands
    assert x.dtype == w.dtype == FP8 and x.shape == (32, 128) and w.shape == (64, 128)
    out = call()
    assert out.dtype == torch.bfloat16 and out.shape == (32, 64)
    expected = x.float() @ w.float().t()  # exact FP8 values, fp32 accumulation
    torch.testing.assert_close(out.float(), expected, rtol=1e-2, atol=1e-2)
    assert input_bytes(ROW) == 32 * 128 + 64 * 128  # one byte per element
    with pytest.raises(ValueError, match="no triton kernel for an FP8 GEMM"):
        make_calls(ROW, "triton", "cpu")


def test_the_runner_times_only_the_baseline_of_an_fp8_row():
    def timer(calls):  # type: ignore[no-untyped-def]
        for call in calls:
            call()
        return {"measured_s": 1e-5, "q20_s": 1e-5, "q80_s": 1e-5, "timing": "test"}

    suite = pd.DataFrame([ROW])
    done = collect_rows(suite, ("triton", "triton_v1", "torch"), "cpu", timer, 0.0, 1e9,
                        None, None, None)  # fmt: skip
    assert done["impl"].tolist() == ["torch:scaled_mm"]
    assert done["dtype"].tolist() == done["weight_dtype"].tolist() == ["fp8"]


def test_with_fp8_gemm_adds_each_16bit_gemm_once_priced_at_the_fp8_roof():
    suite = gpu_quick_suite()
    bf16 = suite[suite["kernel"].eq("gemm")]
    both = with_fp8_gemm(suite)
    fp8 = both[both["kernel"].eq("fp8_gemm")]
    assert len(both) == len(suite) + len(bf16) and len(fp8) == len(bf16)
    assert (fp8["dtype"].eq("fp8") & fp8["weight_dtype"].eq("fp8")).all()
    assert fp8["group_size"].isna().all()
    assert not both[both["kernel"].eq("w4a16_gemm")].empty  # the weight-only rows stay as they were
    # priced on an H200 as FP8: twice the bf16 tensor rate and every element at one byte, so
    # the ideal is half the bf16 shape's whether compute- or memory-bound (the kernel's bf16
    # output is priced at one byte too, as the cost model prices a W8A8 GEMM's output)
    shapes = ["m", "n", "k"]
    a = fp8[shapes].assign(op="gemm", dtype="fp8", weight_dtype="fp8", impl="torch:scaled_mm")
    b = bf16[shapes].assign(op="gemm", dtype="bf16", weight_dtype="bf16", impl="torch:mm")
    rows = pd.concat([a, b], ignore_index=True).assign(measured_s=1.0, gpu="h200")
    ideal = join(rows, ("ideal",))["predicted_ideal_s"].to_numpy()
    fp8_s, bf16_s = ideal[: len(a)], ideal[len(a) :]
    assert fp8_s == pytest.approx(0.5 * bf16_s, rel=1e-4)  # datasheet 1,978.9 vs 2 x 989.4


@pytest.mark.gpu
def test_the_fp8_baseline_runs_graph_timed_on_a_gpu_with_fp8_tensor_cores():
    """On the GPU: cuBLASLt's FP8 product at a production shape (Llama-3-8B's QKV projection at
    512 tokens), inside a CUDA graph as the suite times it; skipped below compute capability 8.9,
    which has no FP8 tensor cores."""
    from rooflens.validate.runner import run_suite

    if torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("no FP8 tensor cores below compute capability 8.9")
    row = ROW.copy()
    row[["m", "n", "k"]] = (512, 6144, 4096)
    (call,) = make_calls(row, "torch", "cuda", copies=1)
    x, w = call.__defaults__
    torch.testing.assert_close(call().float(), x.float() @ w.float().t(), rtol=2e-2, atol=2e-2)
    out = run_suite(pd.DataFrame([row]), "cuda", ("triton", "torch"), cache_bytes=50 * 2**20)
    assert out["impl"].tolist() == ["torch:scaled_mm"] and (out["timing"] == "cuda_graph").all()
    assert 0 < float(out["measured_s"].iloc[0]) < 1e-3  # 26 GFLOP: tens of µs on an H100
