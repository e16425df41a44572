"""DeepSeek's multi-head latent attention (MLA) kernels, as the operator table and
`kernels predict` (ops `mla_prefill`, `mla_decode`) both build them (DeepSeek-V2, §2.1.2).

Decode and speculative verification run the weight-absorbed form (FlashMLA): attention over
the cached latent, kv_lora_rank + rope dims shared by all heads (one "KV head"), values of
kv_lora_rank dims. Prefill (vLLM, SGLang) decompresses K and V from the latent by kv_b_proj (a
GEMM of the operator table) and runs standard multi-head attention with q·k over nope + rope
dims and values of v_head_dim; only the latent is written to the cache. Both launch the
FlashAttention grid of model/ops/attention.py (`with_grid`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rooflens.model.ops.attention import attended_keys, kv_positions, with_grid
from rooflens.model.ops.op import Num, Op
from rooflens.model.specs.dtypes import compute_dtype, dtype_bytes


def _optional(new_tokens: Num, window: int, default_tokens: Num = 1.0) -> dict[str, Any]:
    """Optional call columns, present only where they differ from their defaults: new_tokens
    (default 1 at decode, seq_len at prefill) and window (0: none)."""
    out: dict[str, Any] = {}
    if bool(np.any(np.asarray(new_tokens) != np.asarray(default_tokens))):
        out["new_tokens"] = new_tokens
    if window:
        out["window"] = window
    return out


def mla_decode_op(phase: str, count: int, B: Num, T: Num, L: Num, n_heads: int,
                  kv_lora_rank: int, rope_dim: int, act_dtype: str, kv_dtype: str,
                  window: int = 0, sm_count: int = 0) -> Op:  # fmt: skip
    """Absorbed MLA of T new queries over L positions, `n_heads` per GPU.

    FLOPs: q·k over R + rope dims and p·v over R dims, 2 per multiply-add, causal keys only.
    Bytes: q (R + rope per head) read and o (R per head) written; the latent cache read once
    (all heads share it) and the T new latent rows written to it (read from kv_a_proj first).
    """
    R, ab, kvb = kv_lora_rank, dtype_bytes(act_dtype), dtype_bytes(kv_dtype)
    n, width = B * T, kv_lora_rank + rope_dim
    keys = attended_keys(T, L, window)
    positions = kv_positions(L, window, T)
    latent = B * positions * width * kvb
    q_act = n * n_heads * width * ab
    o_act = n * n_heads * R * ab + n * width * ab
    op = Op(
        name="attn.core",
        phase=phase,
        kind="attention",
        count=count,
        flops=2.0 * B * n_heads * keys * (width + R),
        weight_bytes=0.0,
        act_bytes=q_act + o_act,
        kv_bytes=latent + n * width * kvb,
        compute_dtype=compute_dtype(kv_dtype, act_dtype),
        live_bytes=q_act + o_act,
        shape={
            "batch": B,
            "new_tokens": T,
            "kv_len": L,
            "n_heads": n_heads,
            "n_kv_heads": 1,
            "head_dim": width,
        },
        call={
            "op": "mla_decode",
            "batch": B,
            "kv_len": L,
            "n_heads": n_heads,
            "kv_lora_rank": R,
            "rope_dim": rope_dim,
            "dtype": act_dtype,
            "kv_dtype": kv_dtype,
            **_optional(new_tokens=T, window=window),
        },
    )
    return with_grid(op, positions, latent, sm_count)


def mla_prefill_op(phase: str, count: int, B: Num, T: Num, L: Num, n_heads: int,
                   qk_head_dim: int, v_head_dim: int, kv_lora_rank: int, rope_dim: int,
                   act_dtype: str, kv_dtype: str, window: int = 0,
                   sm_count: int = 0) -> Op:  # fmt: skip
    """Decompressed MLA (multi-head attention) of T new queries over L positions.

    FLOPs: q·k over qk_head_dim and p·v over v_head_dim per (head, attended key).
    Bytes: q and o, the decompressed K and V of every attended position (per head, written by
    kv_b_proj and read here), and the T new latent rows (read, then written to the cache).
    The grid and bandwidth share are those of heads of the mean width (qk + v) / 2.
    """
    Dqk, Dv, ab, kvb = qk_head_dim, v_head_dim, dtype_bytes(act_dtype), dtype_bytes(kv_dtype)
    n, width = B * T, kv_lora_rank + rope_dim
    keys = attended_keys(T, L, window)
    positions = kv_positions(L, window, T)
    q_and_o = n * n_heads * (Dqk + Dv) * ab
    k_and_v = B * positions * n_heads * (Dqk + Dv) * ab
    op = Op(
        name="attn.core",
        phase=phase,
        kind="attention",
        count=count,
        flops=2.0 * B * n_heads * keys * (Dqk + Dv),
        weight_bytes=0.0,
        act_bytes=q_and_o + k_and_v + n * width * ab,
        kv_bytes=n * width * kvb,  # the cache holds the latent only
        compute_dtype=compute_dtype(kv_dtype, act_dtype),
        live_bytes=q_and_o + k_and_v,
        shape={
            "batch": B,
            "new_tokens": T,
            "kv_len": L,
            "n_heads": n_heads,
            "n_kv_heads": n_heads,
            "head_dim": (Dqk + Dv) / 2,
        },
        call={
            "op": "mla_prefill",
            "batch": B,
            "seq_len": L,
            "n_heads": n_heads,
            "qk_head_dim": Dqk,
            "v_head_dim": Dv,
            "kv_lora_rank": kv_lora_rank,
            "rope_dim": rope_dim,
            "dtype": act_dtype,
            "kv_dtype": kv_dtype,
            **_optional(new_tokens=T, window=window, default_tokens=L),
        },
    )
    return with_grid(op, positions, k_and_v, sm_count)
