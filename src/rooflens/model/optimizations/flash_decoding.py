"""`flash-decoding:splits=N`: decode attention parallelised over the KV length, with N fixed.

Mechanism (Dao, Haziza, Massa, Sizov 2023, "Flash-Decoding for long-context inference").
Unsplit FlashAttention launches one thread block per (sequence, KV head, query tile); a decode
step has one query tile, so B·K blocks, and with fewer blocks than SMs the idle SMs issue no
loads: the kernel reaches only blocks/SMs of HBM bandwidth. Flash-Decoding cuts the KV length
into N chunks, B·K·N blocks, each writing a partial output and its log-sum-exp; a second kernel
rescales and sums the partials.

The default table already runs it with N chosen to fill the SMs (model/ops/table.py decode_splits),
as vLLM, SGLang and TensorRT-LLM do, so `splits=0` (auto) is the identity; `splits=N` pins N to
see what another choice costs, and `unsplit-decode` switches the split off (the naive baseline).

Formulas:
    bandwidth share = min(1, B·K·⌈T·(H/K)/128⌉·N / SMs)
    N (auto) = ⌈SMs / blocks⌉, at most one split per 128 keys (one K/V block)
    combine bytes = 2 · B·T·H · N · (Dh + 1) · 4   (fp32 partials and LSE, written then read)
    combine FLOPs = B·T·H · N · (2·Dh + 4)
Splitting changes neither attention FLOPs nor K/V bytes. Only decode-shaped calls split.

Limits: the linear occupancy model ignores that one SM can pull more than its 1/SMs share of
bandwidth, so the unsplit penalty is an upper bound. Eager and MLA attention are left alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rooflens.model.ops.attention import decode_splits, kv_positions, resplit_attention
from rooflens.model.ops.op import Num, Op
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.steps import Step

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario


def splits_of(op: Op, splits: int, sc: Scenario) -> Num:
    s = op.shape
    positions = kv_positions(s["kv_len"], s.get("window", sc.model.sliding_window), s["new_tokens"])
    return decode_splits(s["batch"], s["new_tokens"], s["n_heads"], s["n_kv_heads"], positions,
                         sc.gpu.sm_count, splits)  # fmt: skip


class FlashDecoding(Optimization):
    name = "flash-decoding"
    summary = "split-KV decode attention with a fixed split count (auto is the default stack)"
    citation = "Dao, Haziza, Massa, Sizov 2023, Flash-Decoding for long-context inference"
    order = 32  # table transform, after eager-attention
    params: ClassVar[dict[str, Param]] = {
        "splits": Param(
            int, 0, "KV splits per (sequence, KV head); 0 = enough to fill the SMs", lo=0
        ),
    }

    def ops(self, ops: list[Op], sc: Scenario, step: Step) -> list[Op]:
        if not self["splits"]:
            return ops
        return resplit_attention(ops, lambda op: splits_of(op, self["splits"], sc),
                                 sc.gpu.sm_count)  # fmt: skip
