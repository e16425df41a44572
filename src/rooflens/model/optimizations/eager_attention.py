"""`eager-attention`: switch FlashAttention off; attention as separate GEMM and softmax kernels.

Mechanism (Dao et al. 2022, "FlashAttention", Algorithm 0 and Theorem 2). Standard attention
computes S = QKᵀ and writes it to HBM, reads it for the softmax and writes P, then reads P for
PV: four passes over the T×L score matrix per head, Θ(N·d + N²) HBM accesses. The whole
rectangle is materialised (the causal mask is applied to it), and S and P are live together, so
activation memory grows with T·L. With GQA the eager path (Hugging Face `repeat_kv`) expands K
and V to one copy per query head: a write and a re-read of H/K times the cache. Its GEMMs run
one block row per (sequence, query head), so decode reaches bandwidth by B·H blocks.

FlashAttention (the default stack's attn.core) tiles Q, K, V through SRAM and never writes S:
FLOPs are the same, the S² bytes and S² activation memory vanish. Its IO model: query tiles of
Br = min(⌈M/4d⌉, d) rows (M = SRAM elements), each streaming the K/V blocks it attends, so the
SRAM↔HBM K/V traffic is Σ_i min(L, L − T + i·Br) rows per head, Θ(N²d²/M) for T = L = N
(Dao et al. Theorem 2). Decision (documented as part of attn.core): these re-reads are L2 hits,
not HBM traffic, because the query tiles of one head run as neighbouring thread blocks that
stream the same K/V blocks at the same time, so attn.core charges HBM for each KV head's K/V
once; `flash_kv_rows_streamed` states the tile count and this module's note reports it.

Limits: FLOPs are left unchanged, as the invariant requires (eager kernels also multiply the
masked half of S, which is not counted); the softmax's fp32 upcast is not charged.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rooflens.hardware.spec import GPUSpec
from rooflens.io.units import fmt_bytes
from rooflens.model.ops.attention import (
    attention_bandwidth_fraction,
    attention_thread_blocks,
    kv_positions,
    regrid,
)
from rooflens.model.ops.op import Num, Op
from rooflens.model.optimizations.base import Optimization
from rooflens.model.predict.steps import Prediction, Step, StepPricer
from rooflens.model.specs.dtypes import dtype_bytes

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario

SCORE_PASSES = 4  # write S, read S, write P, read P (Dao et al. 2022, Algorithm 0)


def flash_tile_rows(gpu: GPUSpec, head_dim: int, elem_bytes: float) -> int:
    """FlashAttention's query tile Br = min(⌈M / 4d⌉, d), M = SRAM per SM in elements."""
    sram_elements = gpu.smem_per_sm_bytes / elem_bytes
    return int(min(np.ceil(sram_elements / (4 * head_dim)), head_dim))


def flash_kv_rows_streamed(T: Num, L: Num, tile_rows: int, causal: bool = True) -> Num:
    """K/V rows one head's query tiles stream from memory: Σ_{i=1..Tr} min(L, L − T + i·Br).

    Tr = ⌈T / Br⌉. Non-causal, every tile streams all L rows: Tr·L. Causal, only the last tile
    can overrun L (by Tr·Br − T rows), so the sum is Tr·(L − T) + Br·Tr(Tr+1)/2 − (Tr·Br − T).
    """
    T = np.asarray(T, dtype=np.float64)
    Tr = np.ceil(T / tile_rows)
    if not causal:
        out = Tr * L
    else:
        out = Tr * (L - T) + tile_rows * Tr * (Tr + 1) / 2 - (Tr * tile_rows - T)
    return float(out) if np.ndim(out) == 0 else out


def unsplit(op: Op, sc: Scenario) -> Op:
    return regrid(op, 1.0, sc.gpu.sm_count) if "kv_splits" in op.shape else op


class EagerAttention(Optimization):
    name = "eager-attention"
    summary = "switch FlashAttention off: the T×L score matrix goes through HBM"
    citation = "Dao et al. 2022, FlashAttention (arXiv:2205.14135), Alg. 0 and Thm 2"
    order = 30  # table transform
    switches_off: ClassVar[str] = "FlashAttention"

    def ops(self, ops: list[Op], sc: Scenario, step: Step) -> list[Op]:
        # the score matrix replaces Flash-Decoding's split: no combine kernel runs
        return [self._eager(unsplit(op, sc), sc) if op.kind == "attention" else op for op in ops]

    def _eager(self, op: Op, sc: Scenario) -> Op:
        s = op.shape
        B, T, L = s["batch"], s["new_tokens"], s["kv_len"]
        H, K, Dh = s["n_heads"], s["n_kv_heads"], s["head_dim"]
        ab = dtype_bytes(sc.precision.act_dtype)
        # keys held: the whole prompt in prefill (the window is a mask), the cache in decode
        positions = np.maximum(kv_positions(L, s.get("window", sc.model.sliding_window)), T)
        scores = B * H * T * positions  # the materialised rectangle, elements
        repeat = 0.0
        if sc.model.attention != "mla" and H > K:
            repeat = B * positions * 2 * Dh * H * 2 * ab  # repeat_kv: write, then read, H copies
        blocks = attention_thread_blocks(B, T, H, H)
        return replace(
            op,
            act_bytes=op.act_bytes + SCORE_PASSES * scores * ab + repeat,
            live_bytes=op.live_bytes + 2 * scores * ab,
            bandwidth_fraction=attention_bandwidth_fraction(blocks, sc.gpu.sm_count),
            shape={**s, "eager": True, "kv_splits": 1.0, "thread_blocks": blocks},
        )

    def result(self, pred: Prediction, sc: Scenario, pipeline: StepPricer) -> Prediction:
        m, w = sc.model, sc.workload
        if m.attention == "mla":
            return pred
        ab, P = dtype_bytes(sc.precision.act_dtype), float(w.prompt_len)
        heads = m.n_heads // sc.parallel.tp
        score_bytes = SCORE_PASSES * w.batch * heads * P * P * ab * m.n_layers
        rows = flash_kv_rows_streamed(P, P, flash_tile_rows(sc.gpu, m.head_dim, ab))
        tiles_bytes = float(rows) * 2 * m.head_dim * ab * w.batch * heads * m.n_layers
        note = (
            f"eager-attention: prefill moves {fmt_bytes(score_bytes)} of scores through HBM; "
            f"FlashAttention streams {fmt_bytes(tiles_bytes)} of K/V tiles instead "
            "(L2 hits; HBM reads each KV head once)"
        )
        return replace(pred, notes=[*pred.notes, note])
