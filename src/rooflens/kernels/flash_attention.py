"""Causal prefill attention with GQA, FlashAttention-style (forward only).

Owns the Triton kernel, its launcher `flash_attention`, the reference `flash_attention_ref`
and the cost `flash_attention_cost`.

Layout: q and out [B, H, S, D]; k and v [B, H_kv, S, D]; H_kv divides H and query head h
reads KV head h // (H / H_kv). Any strides are accepted as long as D is contiguous.

Algorithm: FlashAttention (Dao et al., NeurIPS 2022) with the FlashAttention-2 work split
(Dao, 2023): one program per (BLOCK_M query rows, batch·head), looping over KV blocks with an
online softmax (running max m and sum l, rescaling the accumulator), so the S×S score matrix
never reaches HBM. Blocks strictly below the diagonal skip the causal mask; only the diagonal
blocks are masked. Exponentials use exp2 with log2(e) folded into the scale.

Variants: "v2" (issue 25, the default) autotunes the tiles over a Hopper space (128-row query
blocks, 64/128-key steps, 4 or 8 warps, 2-4 stages: the Triton fused-attention tutorial's
space), pruned by what fits shared memory, and starts the query blocks with the most keys first
(causal work grows with the block index; launching the longest programs first shortens the
tail of the last wave). "v1" is the fixed-tile kernel the 2026-11-24 H100 run measured.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from rooflens.kernels.common import (
    FLOAT_DTYPES,
    check_variant,
    dtype_bytes,
    interpreting,
    softmax_fold,
)

LOG2_E = 1.4426950408889634


@triton.jit
def _attend_block(
    acc,  # [BLOCK_M, D] fp32
    m_i,  # [BLOCK_M] running max (log2 domain)
    l_i,  # [BLOCK_M] running sum of exp2
    q,  # [BLOCK_M, D]
    k_base,
    v_base,
    offs_m,
    start_n,
    seq_len,
    stride_ks,
    stride_vs,
    qk_scale,
    INPUT_PRECISION: tl.constexpr,
    MASKED: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    """One online-softmax step over keys [start_n, start_n + BLOCK_N)."""
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    k_ptrs = k_base + offs_n[None, :] * stride_ks + offs_d[:, None]  # [D, BLOCK_N] = K^T
    v_ptrs = v_base + offs_n[:, None] * stride_vs + offs_d[None, :]  # [BLOCK_N, D]
    if MASKED:
        kt = tl.load(k_ptrs, mask=offs_n[None, :] < seq_len, other=0.0)
        v = tl.load(v_ptrs, mask=offs_n[:, None] < seq_len, other=0.0)
    else:
        kt = tl.load(k_ptrs)
        v = tl.load(v_ptrs)
    s = tl.dot(q, kt, input_precision=INPUT_PRECISION) * qk_scale  # [BLOCK_M, BLOCK_N]
    if MASKED:
        keep = (offs_n[None, :] <= offs_m[:, None]) & (offs_n[None, :] < seq_len)
        s = tl.where(keep, s, float("-inf"))
    # Every row sees key 0 in its first block, so m_new is finite after the first step.
    return softmax_fold(acc, m_i, l_i, s, v, INPUT_PRECISION)


@triton.jit
def _flash_attention_kernel(
    q_ptr,  # [B, H, S, D]
    k_ptr,  # [B, H_kv, S, D]
    v_ptr,  # [B, H_kv, S, D]
    o_ptr,  # [B, H, S, D]
    stride_qb,
    stride_qh,
    stride_qs,
    stride_kb,
    stride_kh,
    stride_ks,
    stride_vb,
    stride_vh,
    stride_vs,
    stride_ob,
    stride_oh,
    stride_os,
    n_heads,
    seq_len,
    qk_scale,
    GQA_GROUP: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    LONGEST_FIRST: tl.constexpr,
):
    pid_m = tl.program_id(0)
    if LONGEST_FIRST:  # the last query block sees the most keys: run it first
        pid_m = tl.num_programs(0) - 1 - pid_m
    pid_bh = tl.program_id(1).to(tl.int64)  # int64: b · stride_qb may exceed int32
    b = pid_bh // n_heads
    h = pid_bh % n_heads
    kv_h = h // GQA_GROUP
    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q_base = q_ptr + b * stride_qb + h * stride_qh
    k_base = k_ptr + b * stride_kb + kv_h * stride_kh
    v_base = v_ptr + b * stride_vb + kv_h * stride_vh

    q = tl.load(
        q_base + offs_m[:, None] * stride_qs + offs_d[None, :],
        mask=offs_m[:, None] < seq_len,
        other=0.0,
    )
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)

    # Keys below start_m are visible to every row of this block and lie inside the sequence.
    for start_n in range(0, start_m, BLOCK_N):
        acc, m_i, l_i = _attend_block(
            acc, m_i, l_i, q, k_base, v_base, offs_m, start_n, seq_len,
            stride_ks, stride_vs, qk_scale, INPUT_PRECISION, False, BLOCK_N, HEAD_DIM,
        )  # fmt: skip
    # Diagonal blocks: causal and end-of-sequence masks.
    end_n = tl.minimum(start_m + BLOCK_M, seq_len)
    for start_n in range(start_m, end_n, BLOCK_N):
        acc, m_i, l_i = _attend_block(
            acc, m_i, l_i, q, k_base, v_base, offs_m, start_n, seq_len,
            stride_ks, stride_vs, qk_scale, INPUT_PRECISION, True, BLOCK_N, HEAD_DIM,
        )  # fmt: skip

    out = acc / l_i[:, None]
    o_ptrs = o_ptr + b * stride_ob + h * stride_oh + offs_m[:, None] * stride_os + offs_d[None, :]
    tl.store(o_ptrs, out.to(o_ptr.dtype.element_ty), mask=offs_m[:, None] < seq_len)


def _v2_config(block_m: int, block_n: int, warps: int, stages: int) -> triton.Config:
    return triton.Config({"BLOCK_M": block_m, "BLOCK_N": block_n}, num_warps=warps,
                         num_stages=stages)  # fmt: skip


_V2_CONFIGS = [
    _v2_config(128, 128, 8, 3),
    _v2_config(128, 128, 8, 2),
    _v2_config(128, 64, 8, 3),
    _v2_config(128, 64, 4, 4),
    _v2_config(128, 32, 4, 3),
    _v2_config(64, 64, 4, 3),
    _v2_config(64, 32, 4, 2),
    _v2_config(32, 32, 4, 2),
]


def _fits(configs, named_args, **kwargs):
    """Keep the tiles whose K/V stages fit shared memory (~227 KB on H100) for this head_dim
    and dtype (a stage holds a K and a V tile of BLOCK_N × D elements) and whose fp32
    accumulator takes at most 128 registers a thread (128 × 256 over 4 warps spills)."""
    head_dim = kwargs["HEAD_DIM"]
    size = named_args["q_ptr"].element_size()
    fit = [c for c in configs
           if 2 * c.kwargs["BLOCK_N"] * head_dim * size * c.num_stages
           + c.kwargs["BLOCK_M"] * head_dim * size <= 160 * 1024
           and c.kwargs["BLOCK_M"] * head_dim <= 128 * 32 * c.num_warps]  # fmt: skip
    return fit or configs[-1:]


_flash_attention_v2 = triton.autotune(
    configs=_V2_CONFIGS,
    key=["seq_len", "n_heads", "HEAD_DIM", "GQA_GROUP"],
    prune_configs_by={"early_config_prune": _fits},
)(_flash_attention_kernel)


def _launch_config(head_dim: int, dtype: torch.dtype) -> dict:
    """Tile sizes and warps, fixed per head_dim and dtype (BLOCK_M a multiple of BLOCK_N).

    Wide elements or heads get smaller tiles to stay inside shared memory (~227 KB on H100):
    128x64 fp32 tiles at D=128 would need ~225 KB.
    """
    if interpreting():
        return {"BLOCK_M": 32, "BLOCK_N": 32, "num_warps": 4, "num_stages": 1}
    if dtype == torch.float32 and head_dim == 256:
        return {"BLOCK_M": 32, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2}
    if dtype == torch.float32 or head_dim == 256:
        return {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2}
    return {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4 if head_dim <= 64 else 8, "num_stages": 3}


def flash_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    sm_scale: float | None = None,
    out: torch.Tensor | None = None,
    variant: str = "v2",
) -> torch.Tensor:
    """Causal attention softmax(Q K^T · sm_scale) V over [B, H, S, D] queries, GQA over H_kv heads.

    sm_scale defaults to 1 / sqrt(D). Returns out [B, H, S, D] in q's dtype (`out` may be given).
    `variant`: "v2" (default) or "v1" (module doc).
    """
    check_variant(variant)
    assert q.ndim == 4 and k.ndim == 4 and v.ndim == 4, "q, k, v must be [B, H, S, D]"
    batch, n_heads, seq_len, head_dim = q.shape
    n_kv_heads = k.shape[1]
    assert k.shape == v.shape == (batch, n_kv_heads, seq_len, head_dim), (
        f"k and v must be [B={batch}, H_kv, S={seq_len}, D={head_dim}], "
        f"got {tuple(k.shape)} and {tuple(v.shape)}"
    )
    assert n_heads % n_kv_heads == 0, f"n_kv_heads={n_kv_heads} must divide n_heads={n_heads}"
    assert head_dim in (16, 32, 64, 128, 256), (
        f"head_dim must be a power of two in [16, 256], got {head_dim}"
    )
    assert q.dtype in FLOAT_DTYPES, f"dtype must be fp16, bf16 or fp32, got {q.dtype}"
    assert k.dtype == v.dtype == q.dtype, f"q, k, v dtypes differ: {q.dtype}, {k.dtype}, {v.dtype}"
    assert q.stride(-1) == k.stride(-1) == v.stride(-1) == 1, (
        "the head dim (last) must be contiguous"
    )
    assert q.device == k.device == v.device, "q, k, v must be on one device"
    if out is None:
        out = torch.empty_like(q)
    assert out.shape == q.shape and out.dtype == q.dtype and out.stride(-1) == 1, "out must match q"
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(head_dim)
    args = (
        q, k, v, out,
        q.stride(0), q.stride(1), q.stride(2),
        k.stride(0), k.stride(1), k.stride(2),
        v.stride(0), v.stride(1), v.stride(2),
        out.stride(0), out.stride(1), out.stride(2),
        n_heads, seq_len, sm_scale * LOG2_E,
    )  # fmt: skip
    consts = {"GQA_GROUP": n_heads // n_kv_heads, "INPUT_PRECISION": "ieee", "HEAD_DIM": head_dim}
    if variant == "v2" and not interpreting():

        def grid(meta):
            return (triton.cdiv(seq_len, meta["BLOCK_M"]), batch * n_heads)

        _flash_attention_v2[grid](*args, **consts, LONGEST_FIRST=True)
        return out
    cfg = _launch_config(head_dim, q.dtype)
    grid_v1 = (triton.cdiv(seq_len, cfg["BLOCK_M"]), batch * n_heads)
    _flash_attention_kernel[grid_v1](*args, **consts, **cfg, LONGEST_FIRST=variant == "v2")
    return out


def flash_attention_ref(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sm_scale: float | None = None
) -> torch.Tensor:
    """Plain torch causal GQA attention in the inputs' dtype (materialises the S×S scores)."""
    seq_len, head_dim = q.shape[-2], q.shape[-1]
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)  # [B, H, S, D]
    v = v.repeat_interleave(group, dim=1)
    scale = 1.0 / math.sqrt(head_dim) if sm_scale is None else sm_scale
    scores = (q @ k.transpose(-1, -2)) * scale  # [B, H, S, S]
    future = torch.ones(seq_len, seq_len, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def flash_attention_cost(
    batch: int,
    seq_len: int,
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    dtype: str | torch.dtype,
) -> tuple[int, int]:
    """(FLOPs, minimum HBM bytes) of causal prefill attention.

    FLOPs: Q K^T and P V each take 2·D per (query, visible key) pair per head; causal masking
    leaves S(S+1)/2 pairs, so FLOPs = 4·B·H·D·S(S+1)/2 (softmax exps not counted). Bytes: Q and
    O over H heads, K and V over H_kv heads, each read or written once (FlashAttention never
    writes the scores).
    """
    b = dtype_bytes(dtype)
    pairs = seq_len * (seq_len + 1) // 2
    flops = 4 * batch * n_heads * head_dim * pairs
    elements = 2 * batch * seq_len * head_dim * (n_heads + n_kv_heads)
    return flops, int(elements * b)
