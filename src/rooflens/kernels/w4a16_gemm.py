"""Weight-only int4 GEMM (W4A16): Y[M, N] = X[M, K] · dequant(Wq)[N, K]^T.

Owns `quantize_w4` / `pack_int4` / `unpack_int4` (torch), the Triton kernel that unpacks and
dequantises inside the K loop, its launcher, the reference `w4a16_gemm_ref` and the cost
`w4a16_gemm_cost`.

Format (asymmetric, group-wise along K, the scheme of GPTQ/AWQ-style weight-only int4):
  packed  uint8 [N, K // 2]: byte j of row n holds q[n, 2j] in its low nibble and q[n, 2j+1]
          in its high nibble (packing along K, the reduction dimension)
  q       unsigned 4-bit codes in [0, 15]
  scales  fp16/bf16 [N, K // group_size], same dtype as the activations
  zeros   uint8 [N, K // group_size], integer zero points in [0, 15] (one byte each)
  W[n, k] ≈ (q[n, k] - zeros[n, g]) · scales[n, g],  g = k // group_size

In the kernel each element of a [BLOCK_K, BLOCK_N] tile gathers its byte (k // 2) and shifts
by 4·(k % 2); the byte is fetched twice from L1, once per nibble, but crosses HBM once. (q - z)
lies in [-15, 15] and converts exactly to fp16/bf16, so the dot runs on tensor cores and the
group's scale is applied to the fp32 partial sum, as in kernels/w8a16_gemm.py.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from rooflens.kernels.common import HALF_DTYPES, check_variant, dtype_bytes, interpreting
from rooflens.kernels.splitk import splitk_matmul
from rooflens.kernels.w8a16_gemm import _GPU_CONFIGS, _INTERPRETER_CONFIGS, _block_k


@triton.autotune(
    configs=_INTERPRETER_CONFIGS if interpreting() else _GPU_CONFIGS,
    key=["M", "N", "K", "GROUP_SIZE"],
)
@triton.jit
def _w4a16_gemm_kernel(
    x_ptr,  # [M, K] fp16/bf16
    p_ptr,  # [N, K // 2] uint8, two 4-bit codes per byte
    s_ptr,  # [N, K // GROUP_SIZE] fp16/bf16
    z_ptr,  # [N, K // GROUP_SIZE] uint8
    y_ptr,  # [M, N]
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_pn,
    stride_pk,
    stride_sn,
    stride_sg,
    stride_zn,
    stride_zg,
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
    # [BLOCK_K, BLOCK_N]: element (k, n) reads byte k // 2 of row n.
    p_ptrs = p_ptr + (offs_k[:, None] // 2) * stride_pk + offs_n[None, :] * stride_pn
    shifts = ((offs_k % 2) * 4)[:, None]  # [BLOCK_K, 1]: low nibble for even k, high for odd

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # The launcher guarantees K % GROUP_SIZE == 0 and GROUP_SIZE % BLOCK_K == 0: no K mask,
    # and each K tile lies in one group.
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=mask_m[:, None], other=0.0)
        packed = tl.load(p_ptrs, mask=mask_n[None, :], other=0).to(tl.int32)
        codes = (packed >> shifts) & 0xF  # [BLOCK_K, BLOCK_N] in [0, 15]
        group = k0 // GROUP_SIZE
        scale = tl.load(s_ptr + offs_n * stride_sn + group * stride_sg, mask=mask_n, other=0.0)
        zero = tl.load(z_ptr + offs_n * stride_zn + group * stride_zg, mask=mask_n, other=0).to(
            tl.int32
        )
        w = (codes - zero[None, :]).to(x.dtype)  # exact: values in [-15, 15]
        acc += tl.dot(x, w) * scale.to(tl.float32)[None, :]
        x_ptrs += BLOCK_K * stride_xk
        p_ptrs += (BLOCK_K // 2) * stride_pk

    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


def pack_int4(codes: torch.Tensor) -> torch.Tensor:
    """Pack uint8 codes [N, K] in [0, 15] two per byte along K -> uint8 [N, K // 2]."""
    assert codes.shape[-1] % 2 == 0, "K must be even to pack int4 pairs"
    low = codes[:, 0::2].to(torch.uint8)
    high = codes[:, 1::2].to(torch.uint8)
    return low | (high << 4)


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """Inverse of `pack_int4`: uint8 [N, K // 2] -> uint8 codes [N, K] in [0, 15]."""
    low = packed & 0xF
    high = packed >> 4
    return torch.stack((low, high), dim=-1).reshape(packed.shape[0], -1)


def quantize_w4(
    w: torch.Tensor, group_size: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Asymmetric group-wise int4 quantisation of W [N, K] -> (packed, scales, zeros).

    Per group: scale = (max - min) / 15 (stored in W's dtype), zero = round(-min / scale) in
    [0, 15], q = clamp(round(W / scale) + zero, 0, 15); the stored scale is the one used.
    """
    assert w.ndim == 2, f"w must be [N, K], got {tuple(w.shape)}"
    assert w.dtype.is_floating_point, f"w must be floating point, got {w.dtype}"
    n, k = w.shape
    assert k % group_size == 0 and group_size % 2 == 0, (
        f"K={k} must be a multiple of even group_size={group_size}"
    )
    groups = w.float().reshape(n, k // group_size, group_size)  # [N, G, g]
    w_min = groups.amin(dim=-1).clamp(max=0.0)  # include 0 so that zero is representable
    w_max = groups.amax(dim=-1).clamp(min=0.0)
    scales = ((w_max - w_min) / 15.0).clamp(min=1e-8).to(w.dtype)  # [N, G]
    zeros = torch.round(-w_min / scales.float()).clamp(0, 15)  # [N, G]
    codes = torch.round(groups / scales.float()[..., None]) + zeros[..., None]
    codes = codes.clamp(0, 15).to(torch.uint8).reshape(n, k)
    return pack_int4(codes), scales, zeros.to(torch.uint8)


def dequantize_w4(
    packed: torch.Tensor,
    scales: torch.Tensor,
    zeros: torch.Tensor,
    group_size: int,
    dtype: torch.dtype,
) -> torch.Tensor:
    """W [N, K] in `dtype` from the packed int4 format (math in fp32)."""
    codes = unpack_int4(packed).float()  # [N, K]
    scale_per_k = scales.float().repeat_interleave(group_size, dim=1)
    zero_per_k = zeros.float().repeat_interleave(group_size, dim=1)
    return ((codes - zero_per_k) * scale_per_k).to(dtype)


def w4a16_gemm(
    x: torch.Tensor,
    packed: torch.Tensor,
    scales: torch.Tensor,
    zeros: torch.Tensor,
    group_size: int,
    out: torch.Tensor | None = None,
    variant: str = "v2",
) -> torch.Tensor:
    """Y [M, N] = X [M, K] · dequant(packed, scales, zeros)^T in X's dtype (fp16 or bf16).

    variant "v2" (default): kernels/splitk.py, each packed byte loaded once and K split across
    the SMs at small M; "v1": the tiled kernel above (a byte per nibble, no split)."""
    check_variant(variant)
    assert x.ndim == 2 and packed.ndim == 2, "x and packed must be 2-D"
    m, k = x.shape
    n = packed.shape[0]
    assert x.dtype in HALF_DTYPES, f"x dtype must be fp16 or bf16, got {x.dtype}"
    assert packed.dtype == torch.uint8, f"packed must be uint8, got {packed.dtype}"
    assert packed.shape == (n, k // 2) and k % 2 == 0, (
        f"packed must be [N, K/2={k // 2}], got {tuple(packed.shape)}"
    )
    assert group_size >= 16 and group_size & (group_size - 1) == 0, (
        f"group_size must be a power of two >= 16, got {group_size}"
    )
    assert k % group_size == 0, f"K={k} must be a multiple of group_size={group_size}"
    groups = k // group_size
    assert scales.shape == (n, groups), f"scales must be [{n}, {groups}], got {tuple(scales.shape)}"
    assert scales.dtype == x.dtype, f"scales dtype {scales.dtype} must equal x dtype {x.dtype}"
    assert zeros.shape == (n, groups) and zeros.dtype == torch.uint8, (
        f"zeros must be uint8 [{n}, {groups}]"
    )
    assert x.device == packed.device == scales.device == zeros.device, (
        "all inputs must be on one device"
    )
    if out is None:
        out = torch.empty((m, n), device=x.device, dtype=x.dtype)
    assert out.shape == (m, n) and out.dtype == x.dtype, f"out must be [{m}, {n}] {x.dtype}"
    if variant == "v2":
        return splitk_matmul(x, packed, out, 4, group_size, scales, zeros)

    def grid(meta):
        return (triton.cdiv(m, meta["BLOCK_M"]), triton.cdiv(n, meta["BLOCK_N"]))

    _w4a16_gemm_kernel[grid](
        x,
        packed,
        scales,
        zeros,
        out,
        m,
        n,
        k,
        x.stride(0),
        x.stride(1),
        packed.stride(0),
        packed.stride(1),
        scales.stride(0),
        scales.stride(1),
        zeros.stride(0),
        zeros.stride(1),
        out.stride(0),
        out.stride(1),
        GROUP_SIZE=group_size,
        BLOCK_K=_block_k(group_size),
    )
    return out


def w4a16_gemm_ref(
    x: torch.Tensor,
    packed: torch.Tensor,
    scales: torch.Tensor,
    zeros: torch.Tensor,
    group_size: int,
) -> torch.Tensor:
    """Plain torch: dequantise W to X's dtype, then X · W^T in that dtype."""
    return x @ dequantize_w4(packed, scales, zeros, group_size, x.dtype).T


def w4a16_gemm_cost(
    m: int, n: int, k: int, dtype: str | torch.dtype, group_size: int
) -> tuple[int, int]:
    """(FLOPs, minimum HBM bytes) of the W4A16 GEMM; `dtype` is the activation/scale dtype.

    FLOPs = 2·m·n·k. Bytes = X and Y in `dtype`, half a byte per weight, and per (row, group)
    one scale in `dtype` plus a one-byte zero point.
    """
    b = dtype_bytes(dtype)
    weight_bytes = n * k / 2 + n * (k // group_size) * (b + 1)
    return 2 * m * n * k, int((m * k + m * n) * b + weight_bytes)
