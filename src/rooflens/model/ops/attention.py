"""Attention as the serving engines run it: fused (Flash) causal attention of T new queries over
L cached positions, with Flash-Decoding's split of the KV length at decode and its combine
kernel, the grid each launches and the share of HBM bandwidth that grid can reach.

This is the one model of an attention kernel's grid: the operator table, `kernels predict` and
the calibration fit all build attention ops here (`attention_op`, `with_grid`; MLA in
model/ops/mla.py), and model/pricing/roofline.py prices the grid the op states.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from rooflens.model.ops.op import Num, Op
from rooflens.model.specs.dtypes import compute_dtype, dtype_bytes
from rooflens.model.specs.quant import attention_family

ATTENTION_QUERY_TILE = 128


def attention_thread_blocks(B: Num, T: Num, n_heads: int, n_kv_heads: int) -> Num:
    """Thread blocks of an unsplit FlashAttention call: B · K · ⌈T · (H/K) / 128⌉."""
    group = n_heads // n_kv_heads
    return B * n_kv_heads * np.ceil(np.asarray(T, dtype=np.float64) * group / ATTENTION_QUERY_TILE)


def streamed_fraction(total_bytes: Num, kv_read_bytes: Num, fraction: Num) -> Num:
    """The one bandwidth share for all of an attention op's bytes such that only the streamed
    KV-cache reads run at `fraction` and the rest (Q, O, new K/V rows) at full bandwidth:
    total / (kv_read / fraction + total − kv_read)."""
    rest = np.asarray(total_bytes, dtype=np.float64) - kv_read_bytes
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(total_bytes > 0, total_bytes / (kv_read_bytes / fraction + rest), 1.0)
    return float(out) if np.ndim(out) == 0 else out


def attention_bandwidth_fraction(blocks: Num, sm_count: int) -> Num:
    """Reachable share of HBM bandwidth with `blocks` thread blocks on `sm_count` SMs."""
    out = np.minimum(1.0, np.asarray(blocks, dtype=np.float64) / sm_count)
    return float(out) if np.ndim(out) == 0 else out


KEYS_PER_SPLIT_MIN = 128  # one K/V block: a split shorter than that has nothing to stream
PARTIAL_BYTES = 4.0  # split partial outputs and log-sum-exps are fp32


# Whether a decode call's KV split is the engine heuristic's (True) or pinned by the user or a
# transform (False); where free, pricing takes the unsplit grid when it is cheaper
# (model/pricing/roofline.py price_op).
SPLIT_FREE = "kv_splits_free"
# the shape entries regrid() sets
REGRID_KEYS = ("kv_splits", "thread_blocks", "combine_act_bytes", "combine_vector_flops", "kernels")


def decode_splits(B: Num, T: Num, n_heads: int, n_kv_heads: int, positions: Num, sm_count: int,
                  splits: int = 0) -> Num:  # fmt: skip
    """Flash-Decoding's KV splits (Dao, Haziza, Massa, Sizov 2023): `splits`, or 0 for enough
    to fill the SMs, ⌈SMs / blocks⌉, never shorter than 128 keys on average; only decode-shaped
    calls (one query tile per sequence and KV head) split; prefill has query tiles to spread."""
    if not sm_count:
        return 1.0
    blocks = np.asarray(attention_thread_blocks(B, T, n_heads, n_kv_heads), dtype=np.float64)
    wanted = float(splits) if splits else np.ceil(sm_count / np.maximum(blocks, 1.0))
    # continuous in L, so attention time never falls as the context grows (a whole number of
    # splits would make it a sawtooth): n ≤ L / 128
    cap = np.maximum(1.0, np.asarray(positions, dtype=np.float64) / KEYS_PER_SPLIT_MIN)
    n = np.where(
        blocks <= np.asarray(B) * n_kv_heads, np.maximum(1.0, np.minimum(wanted, cap)), 1.0
    )
    return float(n) if np.ndim(n) == 0 else n


def combine_cost(shape: dict[str, Any], n: Num) -> tuple[Num, Num]:
    """Flash-Decoding's second kernel, rescaling and summing N fp32 partials and log-sum-exps:
    bytes = 2 · B·T·H · N · (Dh + 1) · 4 (written by the split kernel, read back),
    FLOPs = B·T·H · N · (2·Dh + 4); nothing when N = 1."""
    n = np.asarray(n, dtype=np.float64)
    rows = shape["batch"] * shape["new_tokens"] * shape["n_heads"]
    dh = shape["head_dim"]
    partial = np.where(n > 1, 2 * rows * n * (dh + 1) * PARTIAL_BYTES, 0.0)
    flops = np.where(n > 1, rows * n * (2 * dh + 4), 0.0)
    return partial, flops


def regrid(op: Op, n: Num, sm_count: int) -> Op:
    """The attention op run with N KV splits: its grid, the bandwidth share that grid reaches
    for the KV stream, and the combine kernel's traffic and work folded into the op (measured
    decode-attention latencies include the combine, so calibration and table agree)."""
    s = op.shape
    old_bytes, old_flops = s.get("combine_act_bytes", 0.0), s.get("combine_vector_flops", 0.0)
    new_bytes, new_flops = combine_cost(s, n)
    act = op.act_bytes - old_bytes + new_bytes
    blocks = attention_thread_blocks(s["batch"], s["new_tokens"], s["n_heads"], s["n_kv_heads"])
    share = attention_bandwidth_fraction(blocks * n, sm_count)
    total = op.weight_bytes + act + op.kv_bytes
    return replace(
        op,
        act_bytes=act,
        vector_flops=op.vector_flops - old_flops + new_flops,
        live_bytes=op.live_bytes + (new_bytes - old_bytes) / 2,
        bandwidth_fraction=streamed_fraction(total, s.get("kv_read_bytes", op.kv_bytes), share),
        shape={
            **s,
            "kv_splits": n,
            "thread_blocks": blocks * n,
            "combine_act_bytes": new_bytes,
            "combine_vector_flops": new_flops,
            "kernels": np.where(np.asarray(n) > 1, 2.0, 1.0),  # the combine is a second launch
        },
    )


def resplit_attention(ops: list[Op], splits_for: Any, sm_count: int) -> list[Op]:
    """Re-grid every split-capable attention op with `splits_for(op)` KV splits (for the
    flash-decoding and unsplit-decode transforms); the call records the pinned split count."""
    out = []
    for op in ops:
        if op.kind == "attention" and not op.shape.get("eager") and "kv_splits" in op.shape:
            n = splits_for(op)
            pinned = bool(np.any(np.asarray(n) != np.asarray(op.shape["kv_splits"])))
            call = {**op.call, "kv_splits": n} if pinned else op.call
            op = replace(regrid(op, n, sm_count), call=call)
            if pinned:  # the transform's split count, not the heuristic's: priced as pinned
                op = replace(op, shape={**op.shape, SPLIT_FREE: False})
        out.append(op)
    return out


def with_grid(op: Op, positions: Num, kv_read: Num, sm_count: int, splits: Num = 0.0) -> Op:
    """The attention op as launched on `sm_count` SMs: Flash-Decoding's split of the KV length
    for decode-shaped calls (decode_splits, or `splits` where pinned), its combine kernel and
    the bandwidth share of the grid. sm_count = 0 leaves the op ungridded (fills the GPU)."""
    if not sm_count:
        return op
    s = op.shape
    n = decode_splits(s["batch"], s["new_tokens"], s["n_heads"], s["n_kv_heads"], positions,
                      sm_count)  # fmt: skip
    free: Any = True  # the engine's heuristic picks the split (pricing may take the unsplit grid)
    if np.any(np.asarray(splits) > 0):
        n = np.where(np.asarray(splits) > 0, splits, n)
        n = float(n) if np.ndim(n) == 0 else n
        free = np.asarray(splits) <= 0
    op = replace(op, shape={**s, "kv_read_bytes": kv_read, "kv_splits": 1.0, SPLIT_FREE: free})
    return regrid(op, n, sm_count)


def unsplit_where(op: Op, unsplit: Op, take: Any) -> Op:
    """`op` (split) where `take` is False and `unsplit` (its one-split regrid) where True, per
    grid point: the fields and shape entries regrid changes, picked elementwise."""
    take = np.asarray(take, dtype=bool)
    if not take.any():
        return op
    if take.all():
        return unsplit

    def pick(a: Any, b: Any) -> Any:
        return np.where(take, b, a)

    shape = {k: (pick(v, unsplit.shape[k]) if k in REGRID_KEYS else v) for k, v in op.shape.items()}
    return replace(
        op,
        act_bytes=pick(op.act_bytes, unsplit.act_bytes),
        vector_flops=pick(op.vector_flops, unsplit.vector_flops),
        live_bytes=pick(op.live_bytes, unsplit.live_bytes),
        bandwidth_fraction=pick(op.bandwidth_fraction, unsplit.bandwidth_fraction),
        shape=shape,
    )


def attention_call(op_name: str, B: Num, T: Num, L: Num, **columns: Any) -> dict[str, Any]:
    """The `kernels predict` call of an attention kernel of T new queries over L positions:
    `<op_name>_decode` with kv_len when every call has one new token, else `<op_name>_prefill`
    with seq_len = L (and new_tokens where T differs: chunked prefill, verification)."""
    if bool(np.all(np.asarray(T) == 1)):
        return {"op": f"{op_name}_decode", "batch": B, "kv_len": L, **columns}
    extra = {"new_tokens": T} if bool(np.any(np.asarray(T) != np.asarray(L))) else {}
    return {"op": f"{op_name}_prefill", "batch": B, "seq_len": L, **extra, **columns}


def attended_keys(T: Num, L: Num, window: int) -> Num:
    """Σ over the T new queries (positions L−T+1..L) of the keys each attends (causal, windowed).

    With F(x) = Σ_{p=1..x} min(p, W): F(x) = x(x+1)/2 for x ≤ W, else W(W+1)/2 + (x−W)·W;
    the sum is F(L) − F(L−T). W = 0 means no window.
    """

    def F(x: Num) -> Num:
        x = np.asarray(x, dtype=np.float64)
        if not window:
            return x * (x + 1) / 2
        W = float(window)
        return np.where(x <= W, x * (x + 1) / 2, W * (W + 1) / 2 + (x - W) * W)

    out = F(L) - F(np.asarray(L, dtype=np.float64) - T)
    return float(out) if np.ndim(out) == 0 else out


def kv_positions(L: Num, window: int, T: Num = 1.0) -> Num:
    """KV-cache positions a step of T new queries (positions L−T+1..L) reads: all L, or under a
    sliding window the union of their windows, min(L, T + W − 1) (Mistral 7B §2: a query at p
    attends p−W+1..p), which is the last W at decode (T = 1) and the whole prompt in prefill."""
    return np.minimum(L, T + (window - 1)) if window else L


def attention_op(
    phase: str,
    count: int,
    B: Num,
    T: Num,
    L: Num,
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    act_dtype: str,
    kv_dtype: str,
    window: int = 0,
    sm_count: int = 0,
    splits: Num = 0.0,
    write_kernel: bool = False,
) -> Op:
    """Fused (Flash) causal attention of T new queries over L positions, per-GPU head counts.

    With `sm_count` the kernel is FlashAttention with Flash-Decoding's split of the KV length
    for decode-shaped calls (decode_splits), as vLLM, SGLang and TensorRT-LLM run by default; it
    reaches HBM bandwidth in proportion to its thread blocks (attention_bandwidth_fraction).
    0 assumes a kernel that fills the GPU. The split's combine kernel is folded in (regrid);
    `splits` > 0 pins the split count (the flash-decoding optimization). `write_kernel`: the new
    K/V rows go to the cache by a kernel of its own (a serving engine's attention call, as
    aiconfigurator times it), one more launch (model/ops/op.py kernels_per_call).

    FLOPs: QKᵀ and PV, 2·Dh each per (query head, attended key), causal keys only.
    Bytes: Q read and O written once; the KV cache read once per KV head (GQA groups share it)
    and the T new K/V rows written to it (read from the QKV output first).
    """
    ab, kvb = dtype_bytes(act_dtype), dtype_bytes(kv_dtype)
    family = attention_family(act_dtype, kv_dtype)  # its kernel family's terms (pricing)
    decode_family = attention_family(act_dtype, kv_dtype, decode=True)  # one new token
    n = B * T
    keys = attended_keys(T, L, window)
    positions = kv_positions(L, window, T)
    q_and_o = 2 * n * n_heads * head_dim * ab
    new_kv_act = n * 2 * n_kv_heads * head_dim * ab
    kv_read = B * positions * 2 * n_kv_heads * head_dim * kvb
    kv_write = n * 2 * n_kv_heads * head_dim * kvb
    op = Op(
        name="attn.core",
        phase=phase,
        kind="attention",
        count=count,
        flops=2.0 * B * n_heads * keys * 2 * head_dim,
        weight_bytes=0.0,
        act_bytes=q_and_o + new_kv_act,
        kv_bytes=kv_read + kv_write,
        compute_dtype=compute_dtype(kv_dtype, act_dtype),
        live_bytes=q_and_o + new_kv_act,
        shape={
            "batch": B,
            "new_tokens": T,
            "kv_len": L,
            "n_heads": n_heads,
            "n_kv_heads": n_kv_heads,
            "head_dim": head_dim,
            **({"kv_write": 1.0} if write_kernel else {}),
            **({"family": family} if family else {}),
            **({"decode_family": decode_family} if decode_family else {}),
        },
        call=attention_call(
            "attention",
            B,
            T,
            L,
            n_heads=n_heads,
            n_kv_heads=n_kv_heads,
            head_dim=head_dim,
            dtype=act_dtype,
            kv_dtype=kv_dtype,
            **({"window": window} if window else {}),
            **({"kv_write": 1} if write_kernel else {}),
        ),
    )
    return with_grid(op, positions, kv_read, sm_count, splits)
