"""Split-K skinny matmul Y[M, N] = X[M, K] · W[N, K]^T for the decode GEMMs (M = batch ≤ 16),
shared by the dense, W8A16 and W4A16 launchers (kernels/gemm.py, w8a16_gemm.py, w4a16_gemm.py).

At M ≤ 16 a GEMM reads its weights once and does almost no arithmetic per byte: the time is the
weight bytes over HBM bandwidth, if enough loads are in flight. A tile-per-program grid gives
N / BLOCK_N programs (32 for N = 4096, a quarter of an H100's 132 SMs) that each walk all of K
one tile at a time: time grows with K (the tiled W4A16 kernel's ≈ 5 µs per 128-wide step).
Split-K cuts K into `splits` slices so the grid reaches a few programs per SM (the GEMV design of
GemLite's split-K kernels and of stream-K; Osama et al., "Stream-K", PPoPP 2023), each writing
an fp32 partial [M, N] that a second kernel sums (deterministic: no atomics, no zeroing). With
one split the first kernel writes Y itself.

Weight formats (W_BITS): 16 dense (W in X's dtype); 8 symmetric int8 with one scale per
(row, group); 4 asymmetric int4 packed two per byte along K (low nibble even k) with a scale and
an integer zero per (row, group) — the formats of kernels/w8a16_gemm.py and w4a16_gemm.py.
int4 is unpacked in registers after one load of the packed bytes: byte j holds k = 2j and
2j + 1, so the low nibbles multiply X's even columns and the high nibbles its odd ones (two dots
over K/2), and no byte is fetched twice (as Marlin does it, Frantar et al. 2024, "MARLIN",
without its weight reshuffle: the packed rows stay [N, K/2], read contiguous along K). Quantised
K tiles lie inside one group (BLOCK_K divides group_size, slices are whole tiles), so each
tile's scale and zero are loaded once, as one vector over BLOCK_N, and the scale multiplies the
fp32 partial sum of the tile.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from rooflens.kernels.common import device_limits, interpreting

MAX_M = 16  # skinny M: one BLOCK_M = 16 row tile, K split across SMs
PROGRAMS_PER_SM = 4  # grid target: enough loads in flight to saturate HBM (several per SM)

_GPU_CONFIGS = [
    triton.Config({}, num_warps=warps, num_stages=stages)
    for warps in (4, 8)
    for stages in (2, 3, 4)
]


def _enough_warps(configs, named_args, **kwargs):
    """Drop 4-warp configs for the 64/128 x 128 prefill tiles: their fp32 accumulator alone
    takes 64-128 registers a thread, and the dequantised weights spill the rest (SASS: hundreds
    of LDL/STL at sm_90, tests/kernels/sass_mix.md)."""
    big = kwargs["BLOCK_M"] * kwargs["BLOCK_N"] >= 64 * 128
    return [c for c in configs if not big or c.num_warps == 8] or configs


_INTERPRETER_CONFIGS = [triton.Config({}, num_warps=4, num_stages=1)]


def tiles(m: int, w_bits: int, group_size: int) -> tuple[int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K). Skinny M: 16 x 64 output tiles; M > 16 (the quantised
    launchers' prefill): 64 x 128, one wgmma warpgroup tall. K tiles of one group at most,
    128 wide on a GPU (one 256-byte bf16 row segment per dense weight row), 32 in the
    interpreter."""
    if interpreting():
        block_m, block_n, cap = 16, 32, 32
    elif m <= MAX_M:
        block_m, block_n, cap = 16, 64, 128
    else:  # 128-row tiles spill the dequantised weights at 8 warps (tests/kernels/sass_mix.md)
        block_m, block_n, cap = 64, 128, 128
    block_k = cap if w_bits == 16 else min(group_size, cap)
    return block_m, block_n, block_k


def plan_splits(m: int, n: int, k: int, block: tuple[int, int, int], sms: int) -> int:
    """Splits of K so that output tiles × splits reaches PROGRAMS_PER_SM × SMs, each split at
    least two K tiles long (one tile leaves nothing to pipeline), never an empty split."""
    block_m, block_n, block_k = block
    n_tiles = triton.cdiv(n, block_n) * triton.cdiv(m, block_m)
    k_tiles = triton.cdiv(k, block_k)
    wanted = triton.cdiv(PROGRAMS_PER_SM * sms, n_tiles)
    splits = max(1, min(wanted, k_tiles // 2))
    tiles_per_split = triton.cdiv(k_tiles, splits)
    return triton.cdiv(k_tiles, tiles_per_split)  # no split left empty by the rounding


@triton.autotune(
    configs=_INTERPRETER_CONFIGS if interpreting() else _GPU_CONFIGS,
    key=["M", "N", "K", "SPLITS", "W_BITS"],
    prune_configs_by={"early_config_prune": _enough_warps},
)
@triton.jit
def _splitk_kernel(
    x_ptr,  # [M, K] fp16/bf16/fp32
    w_ptr,  # [N, K] (16), int8 [N, K] (8) or uint8 [N, K // 2] (4)
    s_ptr,  # [N, K // GROUP_SIZE] scales (8, 4); unused for 16
    z_ptr,  # [N, K // GROUP_SIZE] uint8 zeros (4); unused otherwise
    y_ptr,  # [M, N] (SPLITS == 1) or fp32 partials [SPLITS, M, N]
    M,
    N,
    K,
    k_per_split,
    stride_xm,
    stride_xk,
    stride_wn,
    stride_wk,
    stride_sn,
    stride_sg,
    stride_zn,
    stride_zg,
    stride_ym,
    stride_yn,
    stride_ys,
    SPLITS: tl.constexpr,
    W_BITS: tl.constexpr,
    GROUP_SIZE: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m = tl.program_id(2)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = offs_m < M
    mask_n = offs_n < N
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    x_rows = x_ptr + offs_m[:, None] * stride_xm
    w_cols = w_ptr + offs_n[None, :] * stride_wn
    if W_BITS == 4:
        offs_j = tl.arange(0, BLOCK_K // 2)  # byte j of the tile: k = 2j (low), 2j + 1 (high)
        offs_k = tl.arange(0, BLOCK_K)
        for k0 in range(k_start, k_end, BLOCK_K):
            # One contiguous load of X's tile, split into its even and odd columns in registers.
            x = tl.load(
                x_rows + (k0 + offs_k)[None, :] * stride_xk, mask=mask_m[:, None], other=0.0
            )
            x_even, x_odd = tl.split(tl.reshape(x, (BLOCK_M, BLOCK_K // 2, 2)))
            packed = tl.load(
                w_cols + (k0 // 2 + offs_j)[:, None] * stride_wk, mask=mask_n[None, :], other=0
            ).to(tl.int32)  # [BLOCK_K / 2, BLOCK_N], contiguous along K
            group = k0 // GROUP_SIZE
            zero = tl.load(z_ptr + offs_n * stride_zn + group * stride_zg, mask=mask_n, other=0)
            scale = tl.load(s_ptr + offs_n * stride_sn + group * stride_sg, mask=mask_n, other=0)
            zero = zero.to(tl.int32)[None, :]
            low = ((packed & 0xF) - zero).to(x_even.dtype)  # exact: values in [-15, 15]
            high = ((packed >> 4) - zero).to(x_even.dtype)
            part = tl.dot(x_even, low, input_precision=INPUT_PRECISION)
            part = tl.dot(x_odd, high, part, input_precision=INPUT_PRECISION)
            acc += part * scale.to(tl.float32)[None, :]
    elif W_BITS == 8:
        offs_k = tl.arange(0, BLOCK_K)
        for k0 in range(k_start, k_end, BLOCK_K):
            x = tl.load(
                x_rows + (k0 + offs_k)[None, :] * stride_xk, mask=mask_m[:, None], other=0.0
            )
            q = tl.load(w_cols + (k0 + offs_k)[:, None] * stride_wk, mask=mask_n[None, :], other=0)
            group = k0 // GROUP_SIZE
            scale = tl.load(s_ptr + offs_n * stride_sn + group * stride_sg, mask=mask_n, other=0)
            part = tl.dot(x, q.to(x.dtype), input_precision=INPUT_PRECISION)  # int8 exact
            acc += part * scale.to(tl.float32)[None, :]
    else:
        offs_k = tl.arange(0, BLOCK_K)
        for k0 in range(k_start, k_end, BLOCK_K):
            mask_k = (k0 + offs_k) < k_end
            x = tl.load(
                x_rows + (k0 + offs_k)[None, :] * stride_xk,
                mask=mask_m[:, None] & mask_k[None, :],
                other=0.0,
            )
            w = tl.load(
                w_cols + (k0 + offs_k)[:, None] * stride_wk,
                mask=mask_k[:, None] & mask_n[None, :],
                other=0.0,
            )
            acc = tl.dot(x, w, acc, input_precision=INPUT_PRECISION)

    y_ptrs = y_ptr + pid_k * stride_ys + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def _sum_splits_kernel(
    part_ptr,  # [SPLITS, M, N] fp32, contiguous
    y_ptr,  # [M, N]
    M,
    N,
    stride_ym,
    stride_yn,
    SPLITS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """Y = Σ_s partial[s], in split order (the same sum on every run)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < M * N
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in range(SPLITS):
        acc += tl.load(part_ptr + s * M * N + offs, mask=mask, other=0.0)
    m, n = offs // N, offs % N
    tl.store(y_ptr + m * stride_ym + n * stride_yn, acc.to(y_ptr.dtype.element_ty), mask=mask)


def splitk_matmul(
    x: torch.Tensor,
    w: torch.Tensor,
    out: torch.Tensor,
    w_bits: int,
    group_size: int = 0,
    scales: torch.Tensor | None = None,
    zeros: torch.Tensor | None = None,
    input_precision: str = "ieee",
    splits: int | None = None,
) -> torch.Tensor:
    """out [M, N] = x · dequant(w)^T through the split-K kernel (any M; K is split only where
    the output tiles alone leave SMs idle). The calling launcher has checked the format; here
    only what this path adds: group-aligned K tiles, a valid split count."""
    m, k = x.shape
    n = out.shape[1]
    assert w_bits in (16, 8, 4), f"w_bits must be 16, 8 or 4, got {w_bits}"
    block_m, block_n, block_k = tiles(m, w_bits, group_size)
    assert w_bits == 16 or group_size % block_k == 0, "K tiles must lie inside one group"
    if splits is None:
        splits = plan_splits(m, n, k, (block_m, block_n, block_k), device_limits(x.device)[0])
    k_tiles = triton.cdiv(k, block_k)
    assert 1 <= splits <= k_tiles, f"splits must be in [1, {k_tiles}], got {splits}"
    k_per_split = triton.cdiv(k_tiles, splits) * block_k
    splits = triton.cdiv(k, k_per_split)  # the split count the slices really make
    target = out
    if splits > 1:
        target = torch.empty((splits, m, n), device=x.device, dtype=torch.float32)
    s = scales if scales is not None else x  # unused pointers still need a tensor
    z = zeros if zeros is not None else x
    grid = (triton.cdiv(n, block_n), splits, triton.cdiv(m, block_m))
    _splitk_kernel[grid](
        x, w, s, z, target, m, n, k, k_per_split,
        x.stride(0), x.stride(1), w.stride(0), w.stride(1),
        s.stride(0), s.stride(1), z.stride(0), z.stride(1),
        target.stride(-2), target.stride(-1), target.stride(0) if splits > 1 else 0,
        SPLITS=splits, W_BITS=w_bits, GROUP_SIZE=max(group_size, 1),
        INPUT_PRECISION=input_precision,
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
    )  # fmt: skip
    if splits > 1:
        block = 1024
        _sum_splits_kernel[(triton.cdiv(m * n, block),)](
            target, out, m, n, out.stride(0), out.stride(1), SPLITS=splits, BLOCK=block
        )
    return out
