"""The one place kernel tests take their tolerances from, and the rule that applies them.

Base tolerance per dtype (relative): fp32 1e-5, fp16 1e-3, bf16 1.6e-2, i.e. one to two units
in the last place of fp16 (2^-10) and bf16 (2^-7), and some eighty of fp32 (2^-23).

For matmuls, attention and reductions the result also depends on summation order, so a kernel
may be off by as much as torch itself. The rule: run the reference twice, once with every
floating input upcast (the "truth") and once in the inputs' own dtype ("torch's same-dtype
result"); torch_err = max |same-dtype − truth|. The kernel output must satisfy
    |kernel − truth| <= max(tol, 2 · torch_err) + tol · |truth|
i.e. assert_close(rtol=tol, atol=max(tol, 2 · torch_err)) against the truth. The truth is
computed in fp64 rather than fp32: for fp16/bf16 the two agree far below the tolerance, and
for fp32 inputs an fp32 "truth" would make torch's own error zero by construction.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

TOLERANCE: dict[torch.dtype, float] = {
    torch.float32: 1e-5,
    torch.float16: 1e-3,
    torch.bfloat16: 1.6e-2,
}

# Triton's interpreter mishandles bf16 (tl.dot and even casts round differently), so bf16 runs
# only where the kernels are compiled for a GPU.
DTYPES = [
    pytest.param(torch.float32, id="fp32"),
    pytest.param(torch.float16, id="fp16"),
    pytest.param(torch.bfloat16, id="bf16", marks=pytest.mark.gpu),
]
HALF_DTYPES = [
    pytest.param(torch.float16, id="fp16"),
    pytest.param(torch.bfloat16, id="bf16", marks=pytest.mark.gpu),
]


def _upcast(value):
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.double()
    return value


def assert_matches_reference(actual: torch.Tensor, ref: Callable, *args, **kwargs) -> None:
    """Check a kernel output against `ref(*args, **kwargs)` with the twice-torch's-error rule.

    `ref` returns a tensor in the dtype of its floating inputs; `actual` is the kernel's output
    for the same inputs.
    """
    truth = ref(*map(_upcast, args), **{k: _upcast(v) for k, v in kwargs.items()}).double()
    same_dtype = ref(*args, **kwargs).double()
    torch_err = (same_dtype - truth).abs().max().item()
    tol = TOLERANCE[actual.dtype]
    assert not actual.isnan().any(), "kernel left NaN in its output (unwritten elements?)"
    torch.testing.assert_close(actual.double(), truth, rtol=tol, atol=max(tol, 2 * torch_err))


def poisoned(shape, dtype: torch.dtype, device: str) -> torch.Tensor:
    """An output buffer full of NaN, so elements a kernel fails to write are caught."""
    return torch.full(shape, float("nan"), dtype=dtype, device=device)
