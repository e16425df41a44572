"""RMSNorm with an optional fused residual add, the pre-attention / pre-MLP norm of Llama-style
models.

Owns the Triton kernel, the launcher `rmsnorm`, the reference `rmsnorm_ref` and the cost
`rmsnorm_cost`.

  h            = x + residual          (rounded to x's dtype: the residual stream the next
                                        layer sees, as in HF transformers and vLLM's
                                        fused_add_rms_norm)
  out          = h / sqrt(mean(h²) + eps) · weight   (fp32 inside, rounded once)
  residual_out = h

RMSNorm: Zhang & Sennrich, "Root Mean Square Layer Normalization", NeurIPS 2019. One program
per row; the whole row sits in registers (hidden sizes up to 64 Ki), so x and residual are read
once and out and residual_out written once, the minimum traffic the fusion exists to reach.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from rooflens.kernels.common import FLOAT_DTYPES, dtype_bytes

MAX_HIDDEN = 65536
ELEMENTS_PER_WARP = 256  # one warp per 256 elements of the row's block ...
MAX_WARPS = 16  # ... up to 16 (4,096 wide): the full-width program model/ops/op.py prices


def program_warps(block_n: int) -> int:
    """Warps of the program that normalises one row held in a block of `block_n` elements."""
    return min(MAX_WARPS, max(1, block_n // ELEMENTS_PER_WARP))


@triton.jit
def _rmsnorm_kernel(
    x_ptr,  # [M, N]
    r_ptr,  # [M, N] residual (unused when not HAS_RESIDUAL)
    w_ptr,  # [N]
    o_ptr,  # [M, N]
    r_out_ptr,  # [M, N] updated residual (unused when not HAS_RESIDUAL)
    N,
    stride_xm,
    stride_rm,
    stride_om,
    stride_rom,
    eps,
    HAS_RESIDUAL: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    h = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0)
    if HAS_RESIDUAL:
        r = tl.load(r_ptr + row * stride_rm + cols, mask=mask, other=0.0)
        h = (h.to(tl.float32) + r.to(tl.float32)).to(r_out_ptr.dtype.element_ty)
        tl.store(r_out_ptr + row * stride_rom + cols, h, mask=mask)
    h = h.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(o_ptr + row * stride_om + cols, (h * rstd * w).to(o_ptr.dtype.element_ty), mask=mask)


def rmsnorm(
    x: torch.Tensor,
    weight: torch.Tensor,
    residual: torch.Tensor | None = None,
    eps: float = 1e-6,
    out: torch.Tensor | None = None,
    residual_out: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """RMSNorm of x [M, N] (after adding `residual` [M, N] if given) scaled by weight [N].

    Returns (out, residual_out); residual_out is None without a residual. `residual_out` may
    alias `residual` for an in-place update (each element is read before it is written).
    """
    assert x.ndim == 2, f"x must be [M, N], got {tuple(x.shape)}"
    m, n = x.shape
    assert x.dtype in FLOAT_DTYPES, f"x dtype must be fp16, bf16 or fp32, got {x.dtype}"
    assert weight.shape == (n,) and weight.dtype == x.dtype, f"weight must be [{n}] {x.dtype}"
    assert 0 < n <= MAX_HIDDEN, f"hidden size must be in [1, {MAX_HIDDEN}], got {n}"
    assert x.stride(1) == 1 and weight.stride(0) == 1, "rows of x and weight must be contiguous"
    assert x.device == weight.device, "x and weight must be on one device"
    if out is None:
        out = torch.empty_like(x)
    assert out.shape == x.shape and out.dtype == x.dtype and out.stride(1) == 1, "out must match x"
    if residual is not None:
        assert residual.shape == x.shape and residual.dtype == x.dtype, "residual must match x"
        assert residual.stride(1) == 1 and residual.device == x.device, (
            "residual rows must be contiguous"
        )
        if residual_out is None:
            residual_out = torch.empty_like(x)
        assert residual_out.shape == x.shape and residual_out.dtype == x.dtype, (
            "residual_out must match x"
        )
        assert residual_out.stride(1) == 1, "residual_out rows must be contiguous"
    else:
        assert residual_out is None, "residual_out needs a residual"
    block_n = triton.next_power_of_2(n)
    _rmsnorm_kernel[(m,)](
        x,
        residual if residual is not None else x,
        weight,
        out,
        residual_out if residual_out is not None else out,
        n,
        x.stride(0),
        residual.stride(0) if residual is not None else 0,
        out.stride(0),
        residual_out.stride(0) if residual_out is not None else 0,
        eps,
        HAS_RESIDUAL=residual is not None,
        BLOCK_N=block_n,
        num_warps=program_warps(block_n),
    )
    return out, residual_out


def rmsnorm_ref(
    x: torch.Tensor, weight: torch.Tensor, residual: torch.Tensor | None = None, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Plain torch (runs on CPU): same rounding points as the kernel, fp32 (or wider) inside."""
    h = x if residual is None else x + residual  # torch rounds the sum to x's dtype
    wide = h.to(torch.promote_types(h.dtype, torch.float32))
    normed = wide * torch.rsqrt(wide.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (normed * weight.to(wide.dtype)).to(x.dtype), (None if residual is None else h)


def rmsnorm_cost(
    n_rows: int, hidden: int, dtype: str | torch.dtype, residual: bool = True
) -> tuple[int, int]:
    """(FLOPs, minimum HBM bytes) of (fused-add) RMSNorm over [n_rows, hidden].

    FLOPs per element: 2 for the square-and-sum, 1 for the 1/rms scale, 1 for the weight, and 1
    for the residual add when fused (the per-row rsqrt is not counted). Bytes: x (and residual)
    read, out (and residual_out) written, weight read once.
    """
    b = dtype_bytes(dtype)
    tensors = 4 if residual else 2
    flops = (5 if residual else 4) * n_rows * hidden
    return flops, int((tensors * n_rows * hidden + hidden) * b)
