"""Tests for kernels/w4a16_gemm.py: int4 packing, quantisation, the GEMM, contract, cost."""

from __future__ import annotations

import pytest
import torch
from kernel_tolerances import HALF_DTYPES, assert_matches_reference, poisoned

from rooflens.kernels.gemm import gemm_cost
from rooflens.kernels.w4a16_gemm import (
    dequantize_w4,
    pack_int4,
    quantize_w4,
    unpack_int4,
    w4a16_gemm,
    w4a16_gemm_cost,
    w4a16_gemm_ref,
)

SHAPES = [(37, 53, 192, 64), (1, 45, 96, 32), (5, 40, 256, 128)]


def test_pack_int4_layout() -> None:
    # Even k in the low nibble, odd k in the high nibble.
    codes = torch.tensor([[1, 2, 15, 0]], dtype=torch.uint8)
    packed = pack_int4(codes)
    assert packed.tolist() == [[0x21, 0x0F]]
    assert torch.equal(unpack_int4(packed), codes)


def test_pack_unpack_round_trip() -> None:
    codes = torch.randint(0, 16, (7, 34), dtype=torch.uint8)
    assert torch.equal(unpack_int4(pack_int4(codes)), codes)


def test_quantize_w4_round_trip() -> None:
    w = torch.randn(53, 192, dtype=torch.float16)
    packed, scales, zeros = quantize_w4(w, group_size=64)
    assert packed.dtype == torch.uint8 and packed.shape == (53, 96)
    assert scales.shape == zeros.shape == (53, 3) and zeros.dtype == torch.uint8
    assert zeros.max() <= 15
    # The group's range [min, max] maps onto codes 0..15: error at most half a step.
    error = (dequantize_w4(packed, scales, zeros, 64, torch.float32) - w.float()).abs()
    half_step = scales.float().repeat_interleave(64, dim=1) / 2
    assert (error <= half_step * 1.05 + 1e-6).all()


@pytest.mark.parametrize("dtype", HALF_DTYPES)
@pytest.mark.parametrize(("m", "n", "k", "group_size"), SHAPES)
def test_w4a16_gemm_matches_reference(m, n, k, group_size, dtype: torch.dtype, device: str) -> None:
    x = torch.randn(m, k, dtype=dtype, device=device)
    packed, scales, zeros = quantize_w4(torch.randn(n, k, dtype=dtype, device=device), group_size)
    out = poisoned((m, n), dtype, device)
    assert w4a16_gemm(x, packed, scales, zeros, group_size, out=out) is out
    assert_matches_reference(out, w4a16_gemm_ref, x, packed, scales, zeros, group_size)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_w4a16_gemm_large_shape_on_gpu(dtype: torch.dtype, device: str) -> None:
    x = torch.randn(333, 4096, dtype=dtype, device=device)
    packed, scales, zeros = quantize_w4(torch.randn(1000, 4096, dtype=dtype, device=device), 128)
    result = w4a16_gemm(x, packed, scales, zeros, 128)
    assert_matches_reference(result, w4a16_gemm_ref, x, packed, scales, zeros, 128)


def test_w4a16_gemm_rejects_bad_inputs() -> None:
    x = torch.randn(4, 64, dtype=torch.float16)
    packed, scales, zeros = quantize_w4(torch.randn(8, 64, dtype=torch.float16), 32)
    with pytest.raises(AssertionError, match="packed must be uint8"):
        w4a16_gemm(x, packed.to(torch.int8), scales, zeros, 32)
    with pytest.raises(AssertionError, match="packed must be"):
        w4a16_gemm(x, unpack_int4(packed), scales, zeros, 32)  # unpacked codes: wrong shape
    with pytest.raises(AssertionError, match="zeros must be"):
        w4a16_gemm(x, packed, scales, zeros.float(), 32)
    with pytest.raises(AssertionError, match="x dtype"):
        w4a16_gemm(x.float(), packed, scales, zeros, 32)


def test_w4a16_gemm_cost_closed_form() -> None:
    m, n, k, g = 37, 53, 192, 64
    flops, bytes_ = w4a16_gemm_cost(m, n, k, "bf16", g)
    assert flops == 2 * m * n * k
    assert bytes_ == 2 * (m * k + m * n) + n * k // 2 + (2 + 1) * n * (k // g)


def test_w4a16_gemm_cost_quarters_weight_bytes_and_keeps_flops() -> None:
    m, n, k, g = 1, 4096, 4096, 128
    dense_flops, dense_bytes = gemm_cost(m, n, k, "fp16")
    flops, bytes_ = w4a16_gemm_cost(m, n, k, "fp16", g)
    assert flops == dense_flops
    activation_bytes = 2 * (m * k + m * n)
    group_bytes = 3 * n * (k // g)
    assert bytes_ - activation_bytes - group_bytes == (dense_bytes - activation_bytes) // 4
