"""Weight-only int8 GEMM (W8A16): Y[M, N] = X[M, K] · dequant(Wq)[N, K]^T.

Owns `quantize_w8` (torch), the Triton kernel that dequantises inside the K loop, its launcher,
the reference `w8a16_gemm_ref` and the cost `w8a16_gemm_cost`.

Format (symmetric, group-wise along K, as in weight-only int8 schemes such as gpt-fast's
int8 mode with groups):
  qweight  int8 [N, K], values in [-127, 127]
  scales   fp16/bf16 [N, K // group_size], same dtype as the activations
  W[n, k] ≈ qweight[n, k] · scales[n, k // group_size]

Each K tile lies inside one group (BLOCK_K divides group_size), so the kernel multiplies the
integer tile, converted exactly to the activation dtype, by X in a tensor-core dot and applies
the group's scale once per output column to the fp32 partial sum. Weights cross HBM as one
byte per element; that halving of weight bytes is what this kernel exists to measure.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from rooflens.kernels.common import HALF_DTYPES, check_variant, dtype_bytes, interpreting
from rooflens.kernels.splitk import splitk_matmul

# BLOCK_K is not tuned: the launcher derives it from group_size (see _block_k).
_GPU_CONFIGS = [
    triton.Config({"BLOCK_M": 16, "BLOCK_N": 64}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_M": 16, "BLOCK_N": 128}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 64}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 128}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 128}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_stages=3, num_warps=8),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256}, num_stages=3, num_warps=8),
]
_INTERPRETER_CONFIGS = [triton.Config({"BLOCK_M": 32, "BLOCK_N": 32}, num_stages=1, num_warps=4)]


def _block_k(group_size: int) -> int:
    """K tile: the largest power of two ≤ 128 (≤ 32 in the interpreter) dividing group_size."""
    cap = 32 if interpreting() else 128
    return min(group_size, cap)


@triton.autotune(
    configs=_INTERPRETER_CONFIGS if interpreting() else _GPU_CONFIGS,
    key=["M", "N", "K", "GROUP_SIZE"],
)
@triton.jit
def _w8a16_gemm_kernel(
    x_ptr,  # [M, K] fp16/bf16
    q_ptr,  # [N, K] int8
    s_ptr,  # [N, K // GROUP_SIZE] fp16/bf16
    y_ptr,  # [M, N]
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_qn,
    stride_qk,
    stride_sn,
    stride_sg,
    stride_ym,
    stride_yn,
    GROUP_SIZE: tl.constexpr,
    BLOCK_K: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk  # [BLOCK_M, BLOCK_K]
    q_ptrs = (
        q_ptr + offs_k[:, None] * stride_qk + offs_n[None, :] * stride_qn
    )  # [BLOCK_K, BLOCK_N] of Wq^T
    s_ptrs = s_ptr + offs_n * stride_sn  # [BLOCK_N], group 0

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # The launcher guarantees K % GROUP_SIZE == 0 and GROUP_SIZE % BLOCK_K == 0: no K mask.
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=mask_m[:, None], other=0.0)
        q = tl.load(q_ptrs, mask=mask_n[None, :], other=0)
        scale = tl.load(s_ptrs + (k0 // GROUP_SIZE) * stride_sg, mask=mask_n, other=0.0)
        # int8 -> fp16/bf16 is exact; the scale is applied in fp32 after the dot.
        partial = tl.dot(x, q.to(x.dtype))
        acc += partial * scale.to(tl.float32)[None, :]
        x_ptrs += BLOCK_K * stride_xk
        q_ptrs += BLOCK_K * stride_qk

    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


def quantize_w8(w: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric group-wise int8 quantisation of W [N, K] -> (qweight int8 [N, K], scales [N, K/g]).

    scale = max|W| over the group / 127, stored in W's dtype; qweight = round(W / scale) with
    the stored (rounded) scale, so dequantisation uses exactly the scale that produced it.
    """
    assert w.ndim == 2, f"w must be [N, K], got {tuple(w.shape)}"
    assert w.dtype.is_floating_point, f"w must be floating point, got {w.dtype}"
    n, k = w.shape
    assert k % group_size == 0, f"K={k} must be a multiple of group_size={group_size}"
    groups = w.float().reshape(n, k // group_size, group_size)  # [N, G, g]
    scales = (groups.abs().amax(dim=-1) / 127.0).clamp(min=1e-8).to(w.dtype)  # [N, G]
    q = torch.round(groups / scales.float()[..., None]).clamp(-127, 127).to(torch.int8)
    return q.reshape(n, k), scales


def dequantize_w8(
    qweight: torch.Tensor, scales: torch.Tensor, group_size: int, dtype: torch.dtype
) -> torch.Tensor:
    """W [N, K] in `dtype` from int8 qweight [N, K] and scales [N, K/g] (math in fp32)."""
    scale_per_k = scales.float().repeat_interleave(group_size, dim=1)  # [N, K]
    return (qweight.float() * scale_per_k).to(dtype)


def w8a16_gemm(
    x: torch.Tensor,
    qweight: torch.Tensor,
    scales: torch.Tensor,
    group_size: int,
    out: torch.Tensor | None = None,
    variant: str = "v2",
) -> torch.Tensor:
    """Y [M, N] = X [M, K] · dequant(qweight, scales)^T in X's dtype (fp16 or bf16).

    variant "v2" (default): kernels/splitk.py (K split across the SMs at small M); "v1": the
    tiled kernel above."""
    check_variant(variant)
    assert x.ndim == 2 and qweight.ndim == 2 and scales.ndim == 2, (
        "x, qweight and scales must be 2-D"
    )
    m, k = x.shape
    n = qweight.shape[0]
    assert x.dtype in HALF_DTYPES, f"x dtype must be fp16 or bf16, got {x.dtype}"
    assert qweight.dtype == torch.int8, f"qweight must be int8, got {qweight.dtype}"
    assert qweight.shape == (n, k), f"qweight must be [N, K={k}], got {tuple(qweight.shape)}"
    assert group_size >= 16 and group_size & (group_size - 1) == 0, (
        f"group_size must be a power of two >= 16, got {group_size}"
    )
    assert k % group_size == 0, f"K={k} must be a multiple of group_size={group_size}"
    assert scales.shape == (n, k // group_size), (
        f"scales must be [{n}, {k // group_size}], got {tuple(scales.shape)}"
    )
    assert scales.dtype == x.dtype, f"scales dtype {scales.dtype} must equal x dtype {x.dtype}"
    assert x.device == qweight.device == scales.device, "all inputs must be on one device"
    if out is None:
        out = torch.empty((m, n), device=x.device, dtype=x.dtype)
    assert out.shape == (m, n) and out.dtype == x.dtype, f"out must be [{m}, {n}] {x.dtype}"
    if variant == "v2":
        return splitk_matmul(x, qweight, out, 8, group_size, scales)

    def grid(meta):
        return (triton.cdiv(m, meta["BLOCK_M"]), triton.cdiv(n, meta["BLOCK_N"]))

    _w8a16_gemm_kernel[grid](
        x,
        qweight,
        scales,
        out,
        m,
        n,
        k,
        x.stride(0),
        x.stride(1),
        qweight.stride(0),
        qweight.stride(1),
        scales.stride(0),
        scales.stride(1),
        out.stride(0),
        out.stride(1),
        GROUP_SIZE=group_size,
        BLOCK_K=_block_k(group_size),
    )
    return out


def w8a16_gemm_ref(
    x: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor, group_size: int
) -> torch.Tensor:
    """Plain torch: dequantise W to X's dtype, then X · W^T in that dtype."""
    return x @ dequantize_w8(qweight, scales, group_size, x.dtype).T


def w8a16_gemm_cost(
    m: int, n: int, k: int, dtype: str | torch.dtype, group_size: int
) -> tuple[int, int]:
    """(FLOPs, minimum HBM bytes) of the W8A16 GEMM; `dtype` is the activation/scale dtype.

    FLOPs = 2·m·n·k as for the dense GEMM (dequantisation is not counted: it is not a matrix
    FLOP and the cost model prices matmul FLOPs). Bytes = X and Y in `dtype`, one byte per
    weight, one scale per (row, group).
    """
    b = dtype_bytes(dtype)
    weight_bytes = n * k + n * (k // group_size) * b
    return 2 * m * n * k, int((m * k + m * n) * b + weight_bytes)
