"""Dense GEMM: Y[M, N] = X[M, K] · W[N, K]^T, the projection inside every nn.Linear.

Owns the Triton kernel, its launcher, the plain-torch reference `gemm_ref` and the analytical
cost `gemm_cost`. The kernel is the classic tiled matmul (one program per [BLOCK_M, BLOCK_N]
output tile, fp32 accumulator, loop over K) with grouped tile ordering so that programs running
at the same time share rows of X and columns of W^T in L2 (Triton matmul tutorial). W is stored
[N, K] like nn.Linear.weight, so the kernel reads W^T tiles through strides, never a transpose.

On a GPU the tile shape is autotuned; in Triton's CPU interpreter one fixed config is used
because the autotuner's benchmarker needs a GPU. Variant "v2" (issue 25, the default) tunes over
Hopper-sized tiles (`_V2_CONFIGS`: 128-256 wide with 64-deep K steps, 8 warps = two warpgroups
for wgmma, 3-4 stages, as in the Triton matmul and persistent-matmul tutorials), pruned to the
tiles that fit M, and sends skinny M (≤ 16, decode) to the split-K kernel of kernels/splitk.py;
"v1" is the kernel the 2026-11-24 H100 run measured (`_GPU_CONFIGS`).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from rooflens.kernels.common import FLOAT_DTYPES, check_variant, dtype_bytes, interpreting
from rooflens.kernels.splitk import MAX_M, splitk_matmul


def _config(block_m: int, block_n: int, block_k: int, group_m: int, stages: int, warps: int):
    tile = {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k, "GROUP_M": group_m}
    return triton.Config(tile, num_stages=stages, num_warps=warps)


_GPU_CONFIGS = [
    # Large tiles for compute-bound shapes (prefill, big batches).
    _config(128, 256, 64, 8, stages=3, warps=8),
    _config(256, 128, 64, 8, stages=3, warps=8),
    _config(128, 128, 64, 8, stages=4, warps=4),
    _config(128, 128, 32, 8, stages=4, warps=4),
    _config(128, 64, 32, 8, stages=4, warps=4),
    _config(64, 128, 32, 8, stages=4, warps=4),
    _config(64, 64, 64, 8, stages=4, warps=4),
    # Skinny tiles for memory-bound shapes (decode: M = batch is small).
    _config(16, 64, 128, 1, stages=4, warps=4),
    _config(16, 128, 64, 1, stages=4, warps=4),
    _config(32, 64, 128, 1, stages=4, warps=4),
    _config(32, 128, 64, 4, stages=4, warps=4),
]
_V2_CONFIGS = [
    _config(128, 256, 64, 8, stages=3, warps=8),
    _config(256, 128, 64, 8, stages=3, warps=8),
    _config(128, 128, 64, 8, stages=4, warps=8),
    _config(128, 128, 64, 8, stages=3, warps=4),
    _config(128, 128, 128, 8, stages=3, warps=8),
    _config(64, 256, 64, 8, stages=3, warps=4),
    _config(128, 64, 64, 8, stages=4, warps=4),
    _config(64, 128, 64, 8, stages=4, warps=4),
    _config(64, 64, 128, 8, stages=4, warps=4),
    _config(32, 128, 64, 4, stages=4, warps=4),
    _config(32, 64, 128, 4, stages=5, warps=4),
]
# A single config: the autotuner then skips benchmarking, which the interpreter cannot do.
_INTERPRETER_CONFIGS = [_config(32, 32, 32, 2, stages=1, warps=4)]


def _fit_m(configs, named_args, **kwargs):
    """Drop tiles more than twice as tall as M (a 256-row tile at M = 64 is three quarters
    padding); always keep the shortest tile."""
    m = named_args["M"]
    fit = [c for c in configs if c.kwargs["BLOCK_M"] <= max(32, 2 * triton.next_power_of_2(m))]
    return fit or [min(configs, key=lambda c: c.kwargs["BLOCK_M"])]


@triton.jit
def _tile_coords(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """Map a linear program id to (tile row, tile column), GROUP_M tile rows at a time.

    Consecutive programs walk down a band of GROUP_M tile rows before moving right, so the
    W^T columns they load are reused from L2 GROUP_M times (Triton matmul tutorial).
    """
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles_per_band = GROUP_M * tiles_n
    band = pid // tiles_per_band
    first_m = band * GROUP_M
    band_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % tiles_per_band) % band_rows
    pid_n = (pid % tiles_per_band) // band_rows
    return pid_m, pid_n


@triton.jit
def _gemm_tiles(
    x_ptr,  # [M, K]
    w_ptr,  # [N, K]
    y_ptr,  # [M, N]
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wn,
    stride_wk,
    stride_ym,
    stride_yn,
    INPUT_PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid_m, pid_n = _tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk  # [BLOCK_M, BLOCK_K]
    w_ptrs = (
        w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn
    )  # [BLOCK_K, BLOCK_N] of W^T

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        mask_k = offs_k < K - k0
        x = tl.load(x_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        w = tl.load(w_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        acc = tl.dot(x, w, acc, input_precision=INPUT_PRECISION)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


# One kernel, two tuning spaces: v1 as measured on 2026-11-24, v2 (issue 25).
_gemm_kernel = triton.autotune(
    configs=_INTERPRETER_CONFIGS if interpreting() else _GPU_CONFIGS, key=["M", "N", "K"]
)(_gemm_tiles)
_gemm_kernel_v2 = triton.autotune(
    configs=_INTERPRETER_CONFIGS if interpreting() else _V2_CONFIGS,
    key=["M", "N", "K"],
    prune_configs_by={"early_config_prune": _fit_m},
)(_gemm_tiles)


def gemm(
    x: torch.Tensor,
    w: torch.Tensor,
    out: torch.Tensor | None = None,
    input_precision: str = "ieee",
    variant: str = "v2",
) -> torch.Tensor:
    """Y = X · W^T with X [M, K] and W [N, K] (nn.Linear layout); returns Y [M, N] in X's dtype.

    `out` may be a preallocated [M, N] tensor (any strides) so the call can be timed alone.
    `input_precision` only matters for fp32 inputs: "ieee" is exact fp32, "tf32" lets NVIDIA
    tensor cores round the inputs to TF32. `variant`: "v2" (default) or "v1" (module doc).
    """
    check_variant(variant)
    assert x.ndim == 2 and w.ndim == 2, (
        f"x and w must be 2-D, got {tuple(x.shape)} and {tuple(w.shape)}"
    )
    assert x.shape[1] == w.shape[1], f"inner dims differ: x {tuple(x.shape)} vs w {tuple(w.shape)}"
    assert x.dtype in FLOAT_DTYPES, f"x dtype must be fp16, bf16 or fp32, got {x.dtype}"
    assert w.dtype == x.dtype, f"w dtype {w.dtype} must equal x dtype {x.dtype}"
    assert x.device == w.device, "x and w must be on the same device"
    assert input_precision in ("ieee", "tf32"), (
        f"input_precision must be 'ieee' or 'tf32', got {input_precision!r}"
    )
    m, k = x.shape
    n = w.shape[0]
    if out is None:
        out = torch.empty((m, n), device=x.device, dtype=x.dtype)
    assert out.shape == (m, n), f"out must be [{m}, {n}], got {tuple(out.shape)}"
    assert out.dtype == x.dtype, f"out dtype {out.dtype} must equal x dtype {x.dtype}"
    if variant == "v2" and m <= MAX_M:
        return splitk_matmul(x, w, out, 16, input_precision=input_precision)

    def grid(meta):
        return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

    kernel = _gemm_kernel_v2 if variant == "v2" else _gemm_kernel
    kernel[grid](
        x,
        w,
        out,
        m,
        n,
        k,
        x.stride(0),
        x.stride(1),
        w.stride(0),
        w.stride(1),
        out.stride(0),
        out.stride(1),
        INPUT_PRECISION=input_precision,
    )
    return out


def gemm_ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Plain-torch Y = X · W^T in the inputs' dtype (runs on CPU)."""
    return x @ w.T


def gemm_cost(m: int, n: int, k: int, dtype: str | torch.dtype) -> tuple[int, int]:
    """(FLOPs, minimum HBM bytes) of Y[m, n] = X[m, k] · W[n, k]^T with all tensors in `dtype`.

    FLOPs = 2·m·n·k (one multiply-add per (m, n, k) triple). Bytes = X and W read once, Y
    written once; the re-reads of tiles from L2 are not HBM traffic.
    """
    b = dtype_bytes(dtype)
    return 2 * m * n * k, int((m * k + n * k + m * n) * b)
