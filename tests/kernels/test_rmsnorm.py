"""Tests for kernels/rmsnorm.py: fused residual-add RMSNorm against torch, contract and cost."""

from __future__ import annotations

import pytest
import torch
from kernel_tolerances import DTYPES, assert_matches_reference, poisoned

from rooflens.kernels.rmsnorm import program_warps, rmsnorm, rmsnorm_cost, rmsnorm_ref
from rooflens.model.ops.op import NORM_FULL_PROGRAM_ELEMENTS, NORM_PROGRAM_THREADS

SHAPES = [(37, 1000), (1, 4096), (5, 33)]


def _out(x, weight, residual=None):
    return rmsnorm_ref(x, weight, residual)[0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("rows", "hidden"), SHAPES)
def test_rmsnorm_with_residual_matches_reference(rows, hidden, dtype, device: str) -> None:
    x = torch.randn(rows, hidden, dtype=dtype, device=device)
    residual = torch.randn(rows, hidden, dtype=dtype, device=device)
    weight = torch.randn(hidden, dtype=dtype, device=device)
    out, residual_out = poisoned(x.shape, dtype, device), poisoned(x.shape, dtype, device)
    result = rmsnorm(x, weight, residual, out=out, residual_out=residual_out)
    assert result[0] is out and result[1] is residual_out
    assert_matches_reference(out, _out, x, weight, residual)
    # The updated residual is one rounding of x + residual: bit-exact.
    torch.testing.assert_close(residual_out, x + residual, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rmsnorm_without_residual_matches_reference(dtype, device: str) -> None:
    x = torch.randn(37, 1000, dtype=dtype, device=device)
    weight = torch.randn(1000, dtype=dtype, device=device)
    out, residual_out = rmsnorm(x, weight, out=poisoned(x.shape, dtype, device))
    assert residual_out is None
    assert_matches_reference(out, _out, x, weight)


def test_rmsnorm_updates_residual_in_place(device: str) -> None:
    x = torch.randn(7, 96, dtype=torch.float16, device=device)
    residual = torch.randn(7, 96, dtype=torch.float16, device=device)
    weight = torch.randn(96, dtype=torch.float16, device=device)
    expected_out, expected_residual = rmsnorm_ref(x, weight, residual)
    out, residual_out = rmsnorm(x, weight, residual, residual_out=residual)
    assert residual_out is residual
    torch.testing.assert_close(residual, expected_residual, rtol=0, atol=0)
    torch.testing.assert_close(out, expected_out, rtol=1e-3, atol=2e-3)


def test_rmsnorm_rejects_bad_inputs() -> None:
    x = torch.randn(4, 64, dtype=torch.float16)
    weight = torch.randn(64, dtype=torch.float16)
    with pytest.raises(AssertionError, match="weight must be"):
        rmsnorm(x, weight[:32])
    with pytest.raises(AssertionError, match="weight must be"):
        rmsnorm(x, weight.float())
    with pytest.raises(AssertionError, match="residual must match"):
        rmsnorm(x, weight, residual=x.float())
    with pytest.raises(AssertionError, match="residual_out needs a residual"):
        rmsnorm(x, weight, residual_out=torch.empty_like(x))
    with pytest.raises(AssertionError, match="contiguous"):
        rmsnorm(x.T.contiguous().T, weight)


def test_rmsnorm_cost_closed_form() -> None:
    rows, hidden = 37, 1000
    assert rmsnorm_cost(rows, hidden, "fp16") == (
        5 * rows * hidden,
        2 * (4 * rows * hidden + hidden),
    )
    plain = rmsnorm_cost(rows, hidden, "fp32", residual=False)
    assert plain == (4 * rows * hidden, 4 * (2 * rows * hidden + hidden))


def test_the_cost_models_full_width_norm_program_is_this_kernels() -> None:
    # model/ops/op.py prices a norm's grid in full-width programs (4,096 elements, 512 threads)
    # and counts how many an SM holds at once from their threads; the kernel must launch that
    full = int(NORM_FULL_PROGRAM_ELEMENTS)
    assert program_warps(full) * 32 == NORM_PROGRAM_THREADS
    assert program_warps(2 * full) == program_warps(full)  # wider rows: more work, same program
    assert program_warps(full // 2) * 32 == NORM_PROGRAM_THREADS / 2  # narrower: fewer threads
