"""Decode attention (one new query token per sequence) with split-KV, Flash-Decoding style.

Owns the split kernel for a contiguous KV cache, the launcher `decode_attention`, the reference
`decode_attention_ref` and the cost `decode_attention_cost`. The combine kernel, workspace and
split heuristics it shares with kernels/paged_decode_attention.py are in kernels/split_kv.py.

Layout: q and out [B, H, D]; k_cache and v_cache [B, H_kv, S_cap, D] (D contiguous; S_cap is
the cache capacity); kv_lens int32 [B], 1 <= kv_lens[b] <= S_cap, so batches may be ragged.

Algorithm: Flash-Decoding (Dao, Haziza, Massa, Sizov, 2023 blog post "Flash-Decoding for
long-context inference"). With one query row per head there is too little work per (batch,
head) to fill a GPU, so the KV length is cut into `num_splits` chunks; one program per
(batch, KV head, split) runs an online softmax over its chunk and writes a partial output and
its log-sum-exp, and a second kernel rescales and sums the partials. For GQA one program
handles all H / H_kv query heads that share a KV head, so K and V are read once per KV head,
not once per query head. Split boundaries come from S_cap, not from the lengths, so the
launcher never synchronises with the device; splits past a sequence's end are empty.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from rooflens.kernels.common import dtype_bytes
from rooflens.kernels.split_kv import (
    LOG2_E,
    _block_n,
    _online_softmax_step,
    _store_partial,
    check_decode_inputs,
    combine_splits,
    decode_workspace,
    num_splits_for,
)


@triton.jit
def _decode_split_kernel(
    q_ptr,  # [B, H, D]
    k_ptr,  # [B, H_kv, S_cap, D]
    v_ptr,  # [B, H_kv, S_cap, D]
    kv_lens_ptr,  # [B] int32
    o_part_ptr,  # [B, H, NUM_SPLITS, D] fp32
    lse_part_ptr,  # [B, H, NUM_SPLITS] fp32
    stride_qb,
    stride_qh,
    stride_kb,
    stride_kh,
    stride_ks,
    stride_vb,
    stride_vh,
    stride_vs,
    stride_ob,
    stride_oh,
    stride_os,
    stride_lb,
    stride_lh,
    stride_ls,
    split_len,
    qk_scale,
    GQA_GROUP: tl.constexpr,
    BLOCK_H: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    BLOCK_N: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)  # int64: b · stride_kb overflows int32 on large caches
    kv_h = tl.program_id(1)
    split = tl.program_id(2)
    kv_len = tl.load(kv_lens_ptr + b)
    start = split * split_len
    end = tl.minimum(start + split_len, kv_len)

    offs_h = kv_h * GQA_GROUP + tl.arange(0, BLOCK_H)  # query heads sharing this KV head
    h_mask = tl.arange(0, BLOCK_H) < GQA_GROUP
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(
        q_ptr + b * stride_qb + offs_h[:, None] * stride_qh + offs_d[None, :],
        mask=h_mask[:, None],
        other=0.0,
    )
    k_base = k_ptr + b * stride_kb + kv_h * stride_kh
    v_base = v_ptr + b * stride_vb + kv_h * stride_vh

    acc = tl.zeros((BLOCK_H, HEAD_DIM), dtype=tl.float32)
    m_i = tl.full((BLOCK_H,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_H,), dtype=tl.float32)
    for start_n in range(start, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        valid = offs_n < end
        kt = tl.load(
            k_base + offs_n[None, :] * stride_ks + offs_d[:, None], mask=valid[None, :], other=0.0
        )
        v = tl.load(
            v_base + offs_n[:, None] * stride_vs + offs_d[None, :], mask=valid[:, None], other=0.0
        )
        kt, v = kt.to(q.dtype), v.to(q.dtype)  # an fp8 cache widens in registers; else no-op
        acc, m_i, l_i = _online_softmax_step(
            acc, m_i, l_i, q, kt, v, valid, qk_scale, INPUT_PRECISION
        )

    o_base = o_part_ptr + b * stride_ob + split * stride_os
    lse_base = lse_part_ptr + b * stride_lb + split * stride_ls
    _store_partial(acc, m_i, l_i, o_base, lse_base, offs_h, h_mask, offs_d, stride_oh, stride_lh)


def decode_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    kv_lens: torch.Tensor,
    sm_scale: float | None = None,
    num_splits: int | None = None,
    out: torch.Tensor | None = None,
    workspace: tuple[torch.Tensor, torch.Tensor] | None = None,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
    variant: str = "v2",
) -> torch.Tensor:
    """Attention of one query token per sequence over its first kv_lens[b] cached positions.

    q [B, H, D]; k_cache, v_cache [B, H_kv, S_cap, D]; kv_lens int32 [B] in [1, S_cap] (not
    checked on the device, to avoid a synchronisation). `workspace` (from `decode_workspace`)
    fixes num_splits and lets a timed loop avoid allocations. Returns out [B, H, D].
    An fp8 cache (fp16/bf16 q) holds K / k_scale and V / v_scale. `variant` "v2" (default)
    splits the KV length to fill every SM (split_kv.planned_num_splits), "v1" at most 64 ways.
    """
    assert k_cache.ndim == 4, f"k_cache must be [B, H_kv, S_cap, D], got {tuple(k_cache.shape)}"
    batch, n_kv_heads, capacity, head_dim = k_cache.shape
    assert q.shape[0] == batch and q.shape[2] == head_dim, (
        f"q {tuple(q.shape)} does not match cache"
    )
    out = check_decode_inputs(q, k_cache, v_cache, kv_lens, n_kv_heads, out, workspace)
    block_n = _block_n(head_dim)
    stages = 2 if q.dtype == torch.float32 else 3
    if workspace is None:
        splits = num_splits or num_splits_for(q, k_cache, n_kv_heads, capacity, variant, stages)
        workspace = decode_workspace(q, splits)
    o_part, lse_part = workspace
    num_splits = o_part.shape[2]
    split_len = triton.cdiv(triton.cdiv(capacity, num_splits), block_n) * block_n
    group = q.shape[1] // n_kv_heads
    scale = (1.0 / math.sqrt(head_dim) if sm_scale is None else sm_scale) * LOG2_E * k_scale

    _decode_split_kernel[(batch, n_kv_heads, num_splits)](
        q, k_cache, v_cache, kv_lens, o_part, lse_part,
        q.stride(0), q.stride(1),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2),
        o_part.stride(0), o_part.stride(1), o_part.stride(2),
        lse_part.stride(0), lse_part.stride(1), lse_part.stride(2),
        split_len, scale,
        GQA_GROUP=group,
        BLOCK_H=max(16, triton.next_power_of_2(group)),
        HEAD_DIM=head_dim,
        BLOCK_N=block_n,
        INPUT_PRECISION="ieee",
        num_warps=4,
        num_stages=stages,
    )  # fmt: skip
    return combine_splits(o_part, lse_part, out, v_scale)


def attend_one_ref(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sm_scale: float | None
) -> torch.Tensor:
    """softmax(q k^T · scale) v for one sequence: q [H, D], k and v [H_kv, L, D] -> [H, D]."""
    group = q.shape[0] // k.shape[0]
    k = k.repeat_interleave(group, dim=0)  # [H, L, D]
    v = v.repeat_interleave(group, dim=0)
    scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale
    scores = (k @ q[:, :, None])[..., 0] * scale  # [H, L]
    return (torch.softmax(scores, dim=-1)[:, None, :] @ v)[:, 0, :]


def decode_attention_ref(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    kv_lens: torch.Tensor,
    sm_scale: float | None = None,
) -> torch.Tensor:
    """Plain torch, one sequence at a time, in the inputs' dtype."""
    rows = [
        attend_one_ref(q[b], k_cache[b, :, :length], v_cache[b, :, :length], sm_scale)
        for b, length in enumerate(kv_lens.tolist())
    ]
    return torch.stack(rows)


def decode_attention_cost(
    batch: int,
    kv_len: int | list[int],
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    dtype: str | torch.dtype,
    kv_dtype: str | torch.dtype | None = None,
) -> tuple[int, int]:
    """(FLOPs, minimum HBM bytes) of one decode step of attention.

    `kv_len` is the positions read per sequence (an int for a uniform batch, or one per
    sequence). FLOPs = 4·H·D·ΣL (q·k and p·v, 2 per multiply-add). Bytes = q and out over H
    heads in `dtype`, plus K and V over H_kv heads (not H: GQA) for ΣL positions in `kv_dtype`.
    The split partials (B·H·splits·(D+1) fp32, written and re-read) are excluded: they are an
    implementation overhead, small next to the cache when L ≫ splits.
    """
    lens = [kv_len] * batch if isinstance(kv_len, int) else list(kv_len)
    assert len(lens) == batch, f"{len(lens)} kv lengths for batch {batch}"
    total_len = sum(lens)
    b = dtype_bytes(dtype)
    kv_b = dtype_bytes(kv_dtype if kv_dtype is not None else dtype)
    flops = 4 * n_heads * head_dim * total_len
    bytes_ = 2 * batch * n_heads * head_dim * b + 2 * n_kv_heads * head_dim * total_len * kv_b
    return flops, int(bytes_)
