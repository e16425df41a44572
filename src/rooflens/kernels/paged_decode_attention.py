"""Decode attention over a paged KV cache (PagedAttention), split-KV like decode_attention.

Owns the paged split kernel, the launcher `paged_decode_attention`, the reference
`paged_decode_attention_ref` (gathers the pages in torch) and the cost
`paged_decode_attention_cost`. The combine kernel and the online-softmax step are shared with
kernels/decode_attention.py.

Layout:
  q, out        [B, H, D]
  k_cache       [num_blocks, block_size, H_kv, D]  (the paged layout of flash-attn's and
  v_cache       [num_blocks, block_size, H_kv, D]   vLLM's flash backend; D contiguous)
  block_table   int32 [B, max_blocks]: position t of sequence b lives in physical block
                block_table[b, t // block_size], slot t % block_size
  kv_lens       int32 [B], 1 <= kv_lens[b] <= max_blocks · block_size

Algorithm: PagedAttention (Kwon et al., SOSP 2023) stores the cache in fixed-size blocks
addressed through a per-sequence block table, so memory is allocated on demand without
fragmentation. This kernel keeps the Flash-Decoding split over the KV length (Dao et al. 2023
blog) and gathers each key/value row through the block table; a BLOCK_N tile may span several
pages, so block_size need not equal the tile.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from rooflens.kernels.decode_attention import attend_one_ref, decode_attention_cost
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
def _paged_split_kernel(
    q_ptr,  # [B, H, D]
    k_ptr,  # [num_blocks, PAGE_SIZE, H_kv, D]
    v_ptr,  # [num_blocks, PAGE_SIZE, H_kv, D]
    block_table_ptr,  # [B, max_blocks] int32
    kv_lens_ptr,  # [B] int32
    o_part_ptr,  # [B, H, NUM_SPLITS, D] fp32
    lse_part_ptr,  # [B, H, NUM_SPLITS] fp32
    stride_qb,
    stride_qh,
    stride_k_blk,
    stride_k_slot,
    stride_kh,
    stride_v_blk,
    stride_v_slot,
    stride_vh,
    stride_bt_b,
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
    PAGE_SIZE: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    b = tl.program_id(0)
    kv_h = tl.program_id(1)
    split = tl.program_id(2)
    kv_len = tl.load(kv_lens_ptr + b)
    start = split * split_len
    end = tl.minimum(start + split_len, kv_len)

    offs_h = kv_h * GQA_GROUP + tl.arange(0, BLOCK_H)
    h_mask = tl.arange(0, BLOCK_H) < GQA_GROUP
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(
        q_ptr + b * stride_qb + offs_h[:, None] * stride_qh + offs_d[None, :],
        mask=h_mask[:, None],
        other=0.0,
    )
    table = block_table_ptr + b * stride_bt_b

    acc = tl.zeros((BLOCK_H, HEAD_DIM), dtype=tl.float32)
    m_i = tl.full((BLOCK_H,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_H,), dtype=tl.float32)
    for start_n in range(start, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)  # logical positions
        valid = offs_n < end
        # int64: physical block · block stride overflows int32 on caches of a few GiB.
        page = tl.load(table + offs_n // PAGE_SIZE, mask=valid, other=0).to(tl.int64)
        slot = offs_n % PAGE_SIZE
        k_rows = k_ptr + page * stride_k_blk + slot * stride_k_slot + kv_h * stride_kh  # [BLOCK_N]
        v_rows = v_ptr + page * stride_v_blk + slot * stride_v_slot + kv_h * stride_vh
        kt = tl.load(
            k_rows[None, :] + offs_d[:, None], mask=valid[None, :], other=0.0
        )  # [D, BLOCK_N]
        v = tl.load(
            v_rows[:, None] + offs_d[None, :], mask=valid[:, None], other=0.0
        )  # [BLOCK_N, D]
        kt, v = kt.to(q.dtype), v.to(q.dtype)  # an fp8 cache widens in registers; else no-op
        acc, m_i, l_i = _online_softmax_step(
            acc, m_i, l_i, q, kt, v, valid, qk_scale, INPUT_PRECISION
        )

    o_base = o_part_ptr + b * stride_ob + split * stride_os
    lse_base = lse_part_ptr + b * stride_lb + split * stride_ls
    _store_partial(acc, m_i, l_i, o_base, lse_base, offs_h, h_mask, offs_d, stride_oh, stride_lh)


def paged_decode_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_table: torch.Tensor,
    kv_lens: torch.Tensor,
    sm_scale: float | None = None,
    num_splits: int | None = None,
    out: torch.Tensor | None = None,
    workspace: tuple[torch.Tensor, torch.Tensor] | None = None,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
    variant: str = "v2",
) -> torch.Tensor:
    """Decode attention of q [B, H, D] over the paged cache; returns out [B, H, D].

    Block-table entries past a sequence's last page are never read and may hold anything;
    entries that are read must be valid block indices (not checked on the device).
    An fp8 cache (fp16/bf16 q) holds K / k_scale and V / v_scale. `variant` "v2" (default)
    splits the KV length to fill every SM (split_kv.planned_num_splits), "v1" at most 64 ways.
    """
    assert k_cache.ndim == 4, (
        f"k_cache must be [num_blocks, block_size, H_kv, D], got {tuple(k_cache.shape)}"
    )
    _, block_size, n_kv_heads, head_dim = k_cache.shape
    batch = q.shape[0]
    assert q.ndim == 3 and q.shape[2] == head_dim, (
        f"q must be [B, H, D={head_dim}], got {tuple(q.shape)}"
    )
    assert block_table.ndim == 2 and block_table.shape[0] == batch, (
        f"block_table must be [B={batch}, max_blocks]"
    )
    assert block_table.dtype == torch.int32, f"block_table must be int32, got {block_table.dtype}"
    assert block_table.stride(1) == 1, "block_table rows must be contiguous"
    assert block_table.device == q.device, "block_table must be on q's device"
    out = check_decode_inputs(q, k_cache, v_cache, kv_lens, n_kv_heads, out, workspace)
    capacity = block_table.shape[1] * block_size
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

    _paged_split_kernel[(batch, n_kv_heads, num_splits)](
        q, k_cache, v_cache, block_table, kv_lens, o_part, lse_part,
        q.stride(0), q.stride(1),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2),
        block_table.stride(0),
        o_part.stride(0), o_part.stride(1), o_part.stride(2),
        lse_part.stride(0), lse_part.stride(1), lse_part.stride(2),
        split_len, scale,
        GQA_GROUP=group,
        BLOCK_H=max(16, triton.next_power_of_2(group)),
        HEAD_DIM=head_dim,
        BLOCK_N=block_n,
        PAGE_SIZE=block_size,
        INPUT_PRECISION="ieee",
        num_warps=4,
        num_stages=stages,
    )  # fmt: skip
    return combine_splits(o_part, lse_part, out, v_scale)


def gather_pages(cache: torch.Tensor, block_table_row: torch.Tensor, length: int) -> torch.Tensor:
    """One sequence's first `length` positions from a paged cache -> [H_kv, length, D]."""
    block_size = cache.shape[1]
    n_pages = -(-length // block_size)
    pages = cache[block_table_row[:n_pages].long()]  # [n_pages, block_size, H_kv, D]
    return pages.flatten(0, 1)[:length].transpose(0, 1)


def paged_decode_attention_ref(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_table: torch.Tensor,
    kv_lens: torch.Tensor,
    sm_scale: float | None = None,
) -> torch.Tensor:
    """Plain torch: gather each sequence's pages, then dense attention in the inputs' dtype."""
    rows = []
    for b, length in enumerate(kv_lens.tolist()):
        k = gather_pages(k_cache, block_table[b], length)
        v = gather_pages(v_cache, block_table[b], length)
        rows.append(attend_one_ref(q[b], k, v, sm_scale))
    return torch.stack(rows)


def paged_decode_attention_cost(
    batch: int,
    kv_len: int | list[int],
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    dtype: str | torch.dtype,
    kv_dtype: str | torch.dtype | None = None,
    block_size: int = 16,
) -> tuple[int, int]:
    """(FLOPs, minimum HBM bytes) of paged decode attention.

    As `decode_attention_cost` (whole pages are not charged: only the kv_len positions are
    read), plus the 4-byte block-table entries of the pages in use, ceil(L / block_size) per
    sequence.
    """
    flops, bytes_ = decode_attention_cost(
        batch, kv_len, n_heads, n_kv_heads, head_dim, dtype, kv_dtype
    )
    lens = [kv_len] * batch if isinstance(kv_len, int) else list(kv_len)
    table_bytes = 4 * sum(-(-length // block_size) for length in lens)
    return flops, bytes_ + table_bytes
