"""Tests for kernels/w8a16_gemm.py: int8 quantisation, the W8A16 GEMM, its contract and cost."""

from __future__ import annotations

import pytest
import torch
from kernel_tolerances import HALF_DTYPES, assert_matches_reference, poisoned

from rooflens.kernels.gemm import gemm_cost
from rooflens.kernels.w8a16_gemm import (
    dequantize_w8,
    quantize_w8,
    w8a16_gemm,
    w8a16_gemm_cost,
    w8a16_gemm_ref,
)

# (m, n, k, group_size): awkward m and n; k spans several groups; one decode-like row.
SHAPES = [(37, 53, 192, 64), (1, 45, 96, 32), (5, 40, 256, 128)]


def test_quantize_w8_round_trip() -> None:
    w = torch.randn(53, 192, dtype=torch.float16)
    qweight, scales = quantize_w8(w, group_size=64)
    assert qweight.dtype == torch.int8 and qweight.shape == (53, 192)
    assert scales.dtype == torch.float16 and scales.shape == (53, 3)
    assert qweight.abs().max() <= 127
    # Rounding to the nearest code: error at most half a step (plus fp16 slack).
    error = (dequantize_w8(qweight, scales, 64, torch.float32) - w.float()).abs()
    half_step = scales.float().repeat_interleave(64, dim=1) / 2
    assert (error <= half_step * 1.01 + 1e-6).all()


@pytest.mark.parametrize("dtype", HALF_DTYPES)
@pytest.mark.parametrize(("m", "n", "k", "group_size"), SHAPES)
def test_w8a16_gemm_matches_reference(m, n, k, group_size, dtype: torch.dtype, device: str) -> None:
    x = torch.randn(m, k, dtype=dtype, device=device)
    qweight, scales = quantize_w8(torch.randn(n, k, dtype=dtype, device=device), group_size)
    out = poisoned((m, n), dtype, device)
    assert w8a16_gemm(x, qweight, scales, group_size, out=out) is out
    assert_matches_reference(out, w8a16_gemm_ref, x, qweight, scales, group_size)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_w8a16_gemm_large_shape_on_gpu(dtype: torch.dtype, device: str) -> None:
    x = torch.randn(333, 4096, dtype=dtype, device=device)
    qweight, scales = quantize_w8(torch.randn(1000, 4096, dtype=dtype, device=device), 128)
    result = w8a16_gemm(x, qweight, scales, 128)
    assert_matches_reference(result, w8a16_gemm_ref, x, qweight, scales, 128)


def _inputs(k: int = 64, group_size: int = 32):
    x = torch.randn(4, k, dtype=torch.float16)
    qweight, scales = quantize_w8(torch.randn(8, k, dtype=torch.float16), group_size)
    return x, qweight, scales


def test_w8a16_gemm_rejects_bad_inputs() -> None:
    x, qweight, scales = _inputs()
    with pytest.raises(AssertionError, match="qweight must be int8"):
        w8a16_gemm(x, qweight.to(torch.int16), scales, 32)
    with pytest.raises(AssertionError, match="x dtype"):
        w8a16_gemm(x.float(), qweight, scales, 32)
    with pytest.raises(AssertionError, match="scales dtype"):
        w8a16_gemm(x, qweight, scales.float(), 32)
    with pytest.raises(AssertionError, match="power of two"):
        w8a16_gemm(x, qweight, scales, 24)
    with pytest.raises(AssertionError, match="scales must be"):
        w8a16_gemm(x, qweight, scales, 16)  # scales were made for groups of 32


def test_w8a16_gemm_cost_closed_form() -> None:
    m, n, k, g = 37, 53, 192, 64
    flops, bytes_ = w8a16_gemm_cost(m, n, k, "fp16", g)
    assert flops == 2 * m * n * k
    assert bytes_ == 2 * (m * k + m * n) + n * k + 2 * n * (k // g)


def test_w8a16_gemm_cost_halves_weight_bytes_and_keeps_flops() -> None:
    m, n, k, g = 1, 4096, 4096, 128
    dense_flops, dense_bytes = gemm_cost(m, n, k, "fp16")
    flops, bytes_ = w8a16_gemm_cost(m, n, k, "fp16", g)
    assert flops == dense_flops
    activation_bytes = 2 * (m * k + m * n)
    scale_bytes = 2 * n * (k // g)
    assert bytes_ - activation_bytes - scale_bytes == (dense_bytes - activation_bytes) // 2
