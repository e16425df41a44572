"""Decode attention (one new query token per sequence) with split-KV, Flash-Decoding style.

Owns the split kernel for a contiguous KV cache, the combine kernel (shared with
kernels/paged_decode_attention.py), the launcher `decode_attention`, the reference
`decode_attention_ref` and the cost `decode_attention_cost`.

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

from kernels.common import FLOAT_DTYPES, dtype_bytes, interpreting

LOG2_E = 1.4426950408889634


@triton.jit
def _online_softmax_step(acc, m_i, l_i, q, kt, v, valid, qk_scale, INPUT_PRECISION: tl.constexpr):
    """Fold one KV block into the running (acc [R, D], max m_i [R], sum l_i [R]), log2 domain.

    q [R, D], kt [D, N] (K^T), v [N, D], valid [N] marks keys inside the sequence; at least one
    key of the block must be valid.
    """
    s = tl.dot(q, kt, input_precision=INPUT_PRECISION) * qk_scale  # [R, N]
    s = tl.where(valid[None, :], s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, axis=1))
    p = tl.math.exp2(s - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, axis=1)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=INPUT_PRECISION)
    return acc, m_new, l_i


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
        acc, m_i, l_i = _online_softmax_step(
            acc, m_i, l_i, q, kt, v, valid, qk_scale, INPUT_PRECISION
        )

    o_base = o_part_ptr + b * stride_ob + split * stride_os
    lse_base = lse_part_ptr + b * stride_lb + split * stride_ls
    _store_partial(acc, m_i, l_i, o_base, lse_base, offs_h, h_mask, offs_d, stride_oh, stride_lh)


@triton.jit
def _combine_kernel(
    o_part_ptr,  # [B, H, NUM_SPLITS, D] fp32
    lse_part_ptr,  # [B, H, NUM_SPLITS] fp32, log2 domain
    o_ptr,  # [B, H, D]
    n_heads,
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
    """out = Σ_s 2^(lse_s − lse) · out_s with lse = log2 Σ_s 2^lse_s (exact softmax merge)."""
    b = tl.program_id(0) // n_heads
    h = tl.program_id(0) % n_heads
    offs_s = tl.arange(0, BLOCK_SPLITS)
    s_mask = offs_s < NUM_SPLITS
    offs_d = tl.arange(0, HEAD_DIM)
    lse = tl.load(
        lse_part_ptr + b * stride_lb + h * stride_lh + offs_s, mask=s_mask, other=float("-inf")
    )
    weights = tl.math.exp2(lse - tl.max(lse, axis=0))  # split 0 is never empty: max is finite
    weights = weights / tl.sum(weights, axis=0)
    parts = tl.load(
        o_part_ptr + b * stride_pb + h * stride_ph + offs_s[:, None] * stride_ps + offs_d[None, :],
        mask=s_mask[:, None],
        other=0.0,
    )  # [BLOCK_SPLITS, D]
    out = tl.sum(parts * weights[:, None], axis=0)
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
    """Enough splits that batch · H_kv · splits reaches ~`target_programs`, never an empty block."""
    wanted = triton.cdiv(target_programs, batch * n_kv_heads)
    return max(1, min(wanted, triton.cdiv(capacity, block_n), 64))


def _block_n(head_dim: int) -> int:
    """KV positions per loop step; smaller for D=256 so three stages fit in shared memory."""
    return 32 if interpreting() or head_dim >= 256 else 64


def combine_splits(o_part: torch.Tensor, lse_part: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """Merge the split partials into out [B, H, D]; shared with the paged launcher."""
    batch, n_heads, num_splits, head_dim = o_part.shape
    _combine_kernel[(batch * n_heads,)](
        o_part, lse_part, out, n_heads,
        o_part.stride(0), o_part.stride(1), o_part.stride(2),
        lse_part.stride(0), lse_part.stride(1),
        out.stride(0), out.stride(1),
        NUM_SPLITS=num_splits,
        BLOCK_SPLITS=triton.next_power_of_2(num_splits),
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
    assert k_cache.dtype == v_cache.dtype == q.dtype, (
        f"cache dtype {k_cache.dtype} must equal q dtype {q.dtype}"
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


def decode_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    kv_lens: torch.Tensor,
    sm_scale: float | None = None,
    num_splits: int | None = None,
    out: torch.Tensor | None = None,
    workspace: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Attention of one query token per sequence over its first kv_lens[b] cached positions.

    q [B, H, D]; k_cache, v_cache [B, H_kv, S_cap, D]; kv_lens int32 [B] in [1, S_cap] (not
    checked on the device, to avoid a synchronisation). `workspace` (from `decode_workspace`)
    fixes num_splits and lets a timed loop avoid allocations. Returns out [B, H, D].
    """
    assert k_cache.ndim == 4, f"k_cache must be [B, H_kv, S_cap, D], got {tuple(k_cache.shape)}"
    batch, n_kv_heads, capacity, head_dim = k_cache.shape
    assert q.shape[0] == batch and q.shape[2] == head_dim, (
        f"q {tuple(q.shape)} does not match cache"
    )
    out = check_decode_inputs(q, k_cache, v_cache, kv_lens, n_kv_heads, out, workspace)
    block_n = _block_n(head_dim)
    if workspace is None:
        workspace = decode_workspace(
            q, num_splits or default_num_splits(batch, n_kv_heads, capacity, block_n)
        )
    o_part, lse_part = workspace
    num_splits = o_part.shape[2]
    split_len = triton.cdiv(triton.cdiv(capacity, num_splits), block_n) * block_n
    group = q.shape[1] // n_kv_heads
    scale = (1.0 / math.sqrt(head_dim) if sm_scale is None else sm_scale) * LOG2_E

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
        num_stages=2 if q.dtype == torch.float32 else 3,
    )  # fmt: skip
    return combine_splits(o_part, lse_part, out)


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
