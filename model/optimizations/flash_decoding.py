"""`flash-decoding:splits=N`: decode attention parallelised over the KV length.

Mechanism (Dao, Haziza, Massa, Sizov 2023, "Flash-Decoding for long-context inference").
Unsplit FlashAttention launches one thread block per (sequence, KV head, query tile); a decode
step has one query tile, so B·K blocks. With fewer blocks than SMs the idle SMs issue no loads
and the kernel reaches only blocks/SMs of HBM bandwidth (the default table prices attn.core that
way: model/ops.py attention_bandwidth_fraction). Flash-Decoding cuts the KV length into N
chunks, B·K·N blocks, each writing a partial output and its log-sum-exp; a second kernel
rescales and sums the partials.

Formulas:
    bandwidth share = min(1, B·K·⌈T·(H/K)/128⌉·N / SMs)
    N (auto, splits=0) = ⌈SMs / blocks⌉, at most one split per 128 keys (one K/V block)
    combine bytes = 2 · B·T·H · N · (Dh + 1) · 4   (fp32 partials and LSE, written then read)
    combine FLOPs = B·T·H · N · (2·Dh + 4)
Splitting changes neither attention FLOPs nor K/V bytes. Only decode-shaped calls split (all
query rows of a (sequence, KV head) in one tile); prefill has query tiles to parallelise over.

Limits: the linear occupancy model ignores that one SM can pull more than its 1/SMs share of
bandwidth, so the unsplit penalty is an upper bound; a batch already filling the GPU gets N = 1
(the identity). Eager attention and MLA attention are left alone.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from hardware.errors import RooflensError
from model.ops import (
    Num,
    Op,
    attention_bandwidth_fraction,
    attention_thread_blocks,
    kv_positions,
)
from model.optimizations.base import Optimization, Param

if TYPE_CHECKING:
    from model.pipeline import Step
    from model.scenario import Scenario

KEYS_PER_SPLIT_MIN = 128  # one K/V block: a split shorter than that has nothing to stream
PARTIAL_BYTES = 4.0  # partial outputs and log-sum-exps are fp32


def effective_splits(splits: int, blocks: Num, positions: Num, sm_count: int) -> Num:
    """Splits actually used: `splits`, or enough to fill the SMs (0), capped by KV blocks."""
    wanted = splits if splits else np.ceil(sm_count / np.asarray(blocks, dtype=np.float64))
    cap = np.maximum(1.0, np.ceil(np.asarray(positions, dtype=np.float64) / KEYS_PER_SPLIT_MIN))
    return np.maximum(1.0, np.minimum(wanted, cap))


class FlashDecoding(Optimization):
    name = "flash-decoding"
    summary = "split-KV decode attention: fills the SMs when batch × KV heads cannot"
    citation = "Dao, Haziza, Massa, Sizov 2023, Flash-Decoding for long-context inference"
    order = 32  # table transform, after eager-attention
    params: ClassVar[dict[str, Param]] = {
        "splits": Param(int, 0, "KV splits per (sequence, KV head); 0 = enough to fill the SMs"),
    }

    def check(self) -> None:
        if self["splits"] < 0:
            raise RooflensError(f"--opt flash-decoding: splits must be ≥ 0, got {self['splits']}")

    def ops(self, ops: list[Op], sc: Scenario, step: Step) -> list[Op]:
        out: list[Op] = []
        for op in ops:
            if op.kind != "attention" or op.shape.get("eager") or sc.model.attention == "mla":
                out.append(op)
                continue
            out.extend(self._split(op, sc))
        return out

    def _split(self, op: Op, sc: Scenario) -> list[Op]:
        s = op.shape
        B, T, H, K = s["batch"], s["new_tokens"], s["n_heads"], s["n_kv_heads"]
        blocks = attention_thread_blocks(B, T, H, K)
        positions = kv_positions(s["kv_len"], sc.model.sliding_window)
        n = effective_splits(self["splits"], blocks, positions, sc.gpu.sm_count)
        # only decode-shaped calls split: one query tile per (sequence, KV head)
        n = np.where(blocks <= B * K, n, 1.0)
        if np.all(n == 1.0):
            return [op]
        split = replace(
            op,
            bandwidth_fraction=attention_bandwidth_fraction(blocks * n, sc.gpu.sm_count),
            shape={**s, "kv_splits": n, "thread_blocks": blocks * n},
        )
        rows = B * T * H
        partial_bytes = np.where(n > 1, 2 * rows * n * (s["head_dim"] + 1) * PARTIAL_BYTES, 0.0)
        combine = Op(
            name="attn.combine",
            phase=op.phase,
            kind="elementwise",
            count=op.count,
            flops=np.where(n > 1, rows * n * (2 * s["head_dim"] + 4), 0.0),
            weight_bytes=0.0,
            act_bytes=partial_bytes,
            kv_bytes=0.0,
            compute_dtype="fp32",
            live_bytes=partial_bytes / 2,
            shape={"kv_splits": n},
        )
        return [split, combine]
