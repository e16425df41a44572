"""Tests for kernels/gemm.py: the dense GEMM against torch, its contract and its cost."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from kernel_tolerances import DTYPES, assert_matches_reference, poisoned

from rooflens.kernels.gemm import gemm, gemm_cost, gemm_ref
from rooflens.kernels.w4a16_gemm import w4a16_gemm_cost
from rooflens.kernels.w8a16_gemm import w8a16_gemm_cost

# Awkward shapes: nothing a multiple of the tile, and a decode-like single row.
SHAPES = [(37, 53, 70), (1, 45, 96)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
def test_gemm_matches_reference(m: int, n: int, k: int, dtype: torch.dtype, device: str) -> None:
    x = torch.randn(m, k, dtype=dtype, device=device)
    w = torch.randn(n, k, dtype=dtype, device=device)
    out = poisoned((m, n), dtype, device)
    result = gemm(x, w, out=out)
    assert result is out
    assert_matches_reference(result, gemm_ref, x, w)


def test_gemm_follows_strides(device: str) -> None:
    # x is a column slice of a wider tensor; out is a transposed view.
    wide = torch.randn(37, 100, dtype=torch.float16, device=device)
    x = wide[:, 10:80]  # [37, 70], row stride 100
    w = torch.randn(53, 70, dtype=torch.float16, device=device)
    out_t = poisoned((53, 37), torch.float16, device)
    gemm(x, w, out=out_t.T)
    assert_matches_reference(out_t.T, gemm_ref, x, w)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_gemm_large_awkward_shape_on_gpu(dtype: torch.dtype, device: str) -> None:
    x = torch.randn(1823, 781, dtype=dtype, device=device)
    w = torch.randn(1157, 781, dtype=dtype, device=device)
    assert_matches_reference(gemm(x, w), gemm_ref, x, w)


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "x_dtype", "w_dtype"),
    [
        ((4, 32), (8, 16), torch.float16, torch.float16),  # inner dims differ
        ((4, 32), (8, 32), torch.float16, torch.float32),  # dtypes differ
        ((4, 32), (8, 32), torch.float64, torch.float64),  # unsupported dtype
        ((2, 4, 32), (8, 32), torch.float16, torch.float16),  # not 2-D
    ],
)
def test_gemm_rejects_bad_inputs(x_shape, w_shape, x_dtype, w_dtype) -> None:
    x = torch.randn(x_shape, dtype=x_dtype)
    w = torch.randn(w_shape, dtype=w_dtype)
    with pytest.raises(AssertionError):
        gemm(x, w)


def test_gemm_rejects_wrong_out_shape() -> None:
    x = torch.randn(4, 32, dtype=torch.float16)
    w = torch.randn(8, 32, dtype=torch.float16)
    with pytest.raises(AssertionError):
        gemm(x, w, out=torch.empty(8, 4, dtype=torch.float16))


def test_gemm_cost_closed_form() -> None:
    m, n, k = 37, 53, 70
    assert gemm_cost(m, n, k, "fp16") == (2 * m * n * k, 2 * (m * k + n * k + m * n))
    assert gemm_cost(m, n, k, torch.float32) == (2 * m * n * k, 4 * (m * k + n * k + m * n))
    # A Llama-2-7B q_proj at decode batch 1: 4096x4096 weights dominate the bytes.
    flops, bytes_ = gemm_cost(1, 4096, 4096, "bf16")
    assert flops == 2 * 4096 * 4096
    assert bytes_ == 2 * (4096 + 4096 * 4096 + 4096)


def test_gemm_cost_invariants() -> None:
    # Same FLOPs whatever the dtype; bytes scale with the element size.
    fp16, fp32 = gemm_cost(64, 128, 256, "fp16"), gemm_cost(64, 128, 256, "fp32")
    assert fp16[0] == fp32[0]
    assert fp32[1] == 2 * fp16[1]
    # String and torch dtypes agree.
    assert gemm_cost(3, 5, 7, "bf16") == gemm_cost(3, 5, 7, torch.bfloat16)


def test_gemm_cost_rejects_unknown_dtype() -> None:
    with pytest.raises(ValueError, match="unknown dtype"):
        gemm_cost(1, 1, 1, "fp13")


@given(
    m=st.integers(1, 4096),
    n=st.integers(1, 4096),
    k_groups=st.integers(1, 64),
    group_size=st.sampled_from([32, 64, 128]),
    dtype=st.sampled_from(["fp16", "bf16"]),
)
def test_weight_only_quantisation_orders_bytes_and_keeps_flops(m, n, k_groups, group_size, dtype):
    k = k_groups * group_size
    dense = gemm_cost(m, n, k, dtype)
    int8 = w8a16_gemm_cost(m, n, k, dtype, group_size)
    int4 = w4a16_gemm_cost(m, n, k, dtype, group_size)
    assert dense[0] == int8[0] == int4[0] == 2 * m * n * k
    assert int4[1] < int8[1] < dense[1]
    assert gemm_cost(m, n, k, dtype) == gemm_cost(n, m, k, dtype)  # symmetric in m and n
