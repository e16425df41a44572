"""The split-KV machinery both decode-attention launchers share (Flash-Decoding; Dao, Haziza,
Massa, Sizov, 2023): the online-softmax step and partial store the split kernels call, the
combine kernel that merges the splits, the fp32 workspace, how many splits to launch and how
long a KV block is, and the input checks. The split kernels themselves live with their cache
layout: kernels/decode_attention.py (contiguous) and kernels/paged_decode_attention.py (paged).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from rooflens.kernels.common import (
    FLOAT_DTYPES,
    HALF_DTYPES,
    check_variant,
    device_limits,
    interpreting,
    softmax_fold,
)

LOG2_E = 1.4426950408889634
# KV caches stored in 8 bits, per-tensor scaled (vLLM's kv_cache_dtype="fp8"): the kernels
# load them and convert to q's dtype in registers; needs sm_89 or newer on a GPU.
FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)


@triton.jit
def _online_softmax_step(acc, m_i, l_i, q, kt, v, valid, qk_scale, INPUT_PRECISION: tl.constexpr):
    """Fold one KV block into the running (acc [R, D], max m_i [R], sum l_i [R]), log2 domain.

    q [R, D], kt [D, N] (K^T), v [N, D], valid [N] marks keys inside the sequence; at least one
    key of the block must be valid.
    """
    s = tl.dot(q, kt, input_precision=INPUT_PRECISION) * qk_scale  # [R, N]
    s = tl.where(valid[None, :], s, float("-inf"))
    return softmax_fold(acc, m_i, l_i, s, v, INPUT_PRECISION)


@triton.jit
def _store_partial(acc, m_i, l_i, o_base, lse_base, offs_h, h_mask, offs_d, stride_oh, stride_lh):
    """Write a split's normalised output and log2-sum-exp; an empty split writes 0 and -inf.

    o_base and lse_base point at (batch, head 0, split) of the partial buffers.
    """
    empty = l_i == 0.0
    out = acc / tl.where(empty, 1.0, l_i)[:, None]
    lse = tl.where(empty, float("-inf"), m_i + tl.math.log2(tl.where(empty, 1.0, l_i)))
    tl.store(o_base + offs_h[:, None] * stride_oh + offs_d[None, :], out, mask=h_mask[:, None])
    tl.store(lse_base + offs_h * stride_lh, lse, mask=h_mask)


@triton.jit
def _combine_kernel(
    o_part_ptr,  # [B, H, NUM_SPLITS, D] fp32
    lse_part_ptr,  # [B, H, NUM_SPLITS] fp32, log2 domain
    o_ptr,  # [B, H, D]
    n_heads,
    out_scale,
    stride_pb,
    stride_ph,
    stride_ps,
    stride_lb,
    stride_lh,
    stride_ob,
    stride_oh,
    NUM_SPLITS: tl.constexpr,
    BLOCK_SPLITS: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    """out = out_scale · Σ_s 2^(lse_s − lse) · out_s with lse = log2 Σ_s 2^lse_s (exact softmax
    merge), BLOCK_SPLITS splits at a time so that hundreds of splits stay in registers."""
    b = tl.program_id(0) // n_heads
    h = tl.program_id(0) % n_heads
    offs_d = tl.arange(0, HEAD_DIM)
    lse_base = lse_part_ptr + b * stride_lb + h * stride_lh
    part_base = o_part_ptr + b * stride_pb + h * stride_ph
    top = float("-inf")
    for s0 in range(0, NUM_SPLITS, BLOCK_SPLITS):
        offs_s = s0 + tl.arange(0, BLOCK_SPLITS)
        lse = tl.load(lse_base + offs_s, mask=offs_s < NUM_SPLITS, other=float("-inf"))
        top = tl.maximum(top, tl.max(lse, axis=0))  # split 0 is never empty: finite
    total = 0.0
    acc = tl.zeros((HEAD_DIM,), dtype=tl.float32)
    for s0 in range(0, NUM_SPLITS, BLOCK_SPLITS):
        offs_s = s0 + tl.arange(0, BLOCK_SPLITS)
        s_mask = offs_s < NUM_SPLITS
        lse = tl.load(lse_base + offs_s, mask=s_mask, other=float("-inf"))
        weights = tl.math.exp2(lse - top)
        parts = tl.load(
            part_base + offs_s[:, None] * stride_ps + offs_d[None, :],
            mask=s_mask[:, None],
            other=0.0,
        )  # [BLOCK_SPLITS, D]
        total += tl.sum(weights, axis=0)
        acc += tl.sum(parts * weights[:, None], axis=0)
    out = acc * (out_scale / total)
    tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_d, out.to(o_ptr.dtype.element_ty))


def decode_workspace(q: torch.Tensor, num_splits: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Partial outputs [B, H, num_splits, D] and log2-sum-exps [B, H, num_splits], both fp32."""
    batch, n_heads, head_dim = q.shape
    o_part = torch.empty(
        (batch, n_heads, num_splits, head_dim), device=q.device, dtype=torch.float32
    )
    lse_part = torch.empty((batch, n_heads, num_splits), device=q.device, dtype=torch.float32)
    return o_part, lse_part


def default_num_splits(
    batch: int, n_kv_heads: int, capacity: int, block_n: int, target_programs: int = 256
) -> int:
    """Variant v1: enough splits that batch · H_kv · splits reaches ~`target_programs`, at most
    64 (64 programs on an H100's 132 SMs at batch 1 with one KV head), never an empty block."""
    wanted = triton.cdiv(target_programs, batch * n_kv_heads)
    return max(1, min(wanted, triton.cdiv(capacity, block_n), 64))


def planned_num_splits(
    batch: int, n_kv_heads: int, capacity: int, block_n: int, stage_bytes: int, device
) -> int:
    """Variant v2: splits so that batch · H_kv · splits fills every SM as deep as it holds
    programs (one full wave), no cap but the cache: each split keeps at least one KV block.

    Programs per SM: 16 by threads (4 warps of 2048 threads), fewer when the K/V stages
    (`stage_bytes` per program) exceed the SM's shared memory."""
    sms, smem = device_limits(device)
    per_sm = max(1, min(16, smem // max(stage_bytes, 1)))
    wanted = triton.cdiv(sms * per_sm, batch * n_kv_heads)
    return max(1, min(wanted, triton.cdiv(capacity, block_n)))


def num_splits_for(q, k_cache, n_kv_heads, capacity, variant, stages):
    """The split count of a launch with no workspace given (v1 or v2, above)."""
    check_variant(variant)
    batch, head_dim = q.shape[0], q.shape[-1]
    block_n = _block_n(head_dim)
    if variant == "v1":
        return default_num_splits(batch, n_kv_heads, capacity, block_n)
    stage_bytes = stages * 2 * block_n * head_dim * k_cache.element_size()
    return planned_num_splits(batch, n_kv_heads, capacity, block_n, stage_bytes, q.device)


def _block_n(head_dim: int) -> int:
    """KV positions per loop step; smaller for D=256 so three stages fit in shared memory."""
    return 32 if interpreting() or head_dim >= 256 else 64


def combine_splits(
    o_part: torch.Tensor, lse_part: torch.Tensor, out: torch.Tensor, out_scale: float = 1.0
) -> torch.Tensor:
    """Merge the split partials into out [B, H, D] (times `out_scale`, an fp8 cache's V scale);
    shared with the paged launcher."""
    batch, n_heads, num_splits, head_dim = o_part.shape
    _combine_kernel[(batch * n_heads,)](
        o_part, lse_part, out, n_heads, out_scale,
        o_part.stride(0), o_part.stride(1), o_part.stride(2),
        lse_part.stride(0), lse_part.stride(1),
        out.stride(0), out.stride(1),
        NUM_SPLITS=num_splits,
        BLOCK_SPLITS=min(32, triton.next_power_of_2(num_splits)),
        HEAD_DIM=head_dim,
    )  # fmt: skip
    return out


def check_decode_inputs(q, k_cache, v_cache, kv_lens, n_kv_heads, out, workspace):
    """Asserts shared by both decode launchers; returns `out`, allocated if None."""
    assert q.ndim == 3, f"q must be [B, H, D], got {tuple(q.shape)}"
    batch, n_heads, head_dim = q.shape
    assert n_heads % n_kv_heads == 0, f"n_kv_heads={n_kv_heads} must divide n_heads={n_heads}"
    assert head_dim in (16, 32, 64, 128, 256), (
        f"head_dim must be a power of two in [16, 256], got {head_dim}"
    )
    assert q.dtype in FLOAT_DTYPES, f"dtype must be fp16, bf16 or fp32, got {q.dtype}"
    assert k_cache.dtype == v_cache.dtype, "k_cache and v_cache must have one dtype"
    assert k_cache.dtype == q.dtype or (k_cache.dtype in FP8_DTYPES and q.dtype in HALF_DTYPES), (
        f"cache dtype {k_cache.dtype} must equal q dtype {q.dtype} (or be fp8 under fp16/bf16)"
    )
    assert k_cache.shape == v_cache.shape, "k_cache and v_cache must have one shape"
    assert q.stride(-1) == k_cache.stride(-1) == v_cache.stride(-1) == 1, (
        "the head dim (last) must be contiguous"
    )
    assert kv_lens.shape == (batch,) and kv_lens.dtype == torch.int32, (
        f"kv_lens must be int32 [{batch}]"
    )
    assert q.device == k_cache.device == v_cache.device == kv_lens.device, (
        "all inputs must be on one device"
    )
    if out is None:
        out = torch.empty_like(q)
    assert out.shape == q.shape and out.dtype == q.dtype and out.stride(-1) == 1, "out must match q"
    if workspace is not None:
        o_part, lse_part = workspace
        assert o_part.shape[:2] == (batch, n_heads) and o_part.shape[3] == head_dim, (
            "workspace o_part shape"
        )
        assert lse_part.shape == o_part.shape[:3], "workspace lse_part must be [B, H, num_splits]"
        assert o_part.dtype == lse_part.dtype == torch.float32, "workspace must be fp32"
        assert o_part.stride(-1) == 1 and lse_part.stride(-1) == 1, (
            "workspace last dims must be contiguous"
        )
    return out
