"""`unsplit-decode`: switch Flash-Decoding off, so decode attention runs as plain FlashAttention.

Mechanism: unsplit FlashAttention launches one thread block per (sequence, KV head, query
tile); at decode that is B·K blocks, and with fewer blocks than SMs the idle SMs issue no loads,
so the kernel reaches only min(1, B·K / SMs) of HBM bandwidth (Dao, Haziza, Massa, Sizov 2023,
"Flash-Decoding for long-context inference"; the default table splits the KV length to fill the
SMs, see model/optimizations/flash_decoding.py). No combine kernel runs.

Formula: attention memory time = KV bytes / (bandwidth · min(1, B·K·⌈T·(H/K)/128⌉ / SMs)).
Limits: the linear occupancy model is an upper bound on the penalty (one SM can pull more than
its 1/SMs share of bandwidth); prefill and batches that fill the GPU are unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rooflens.model.ops.attention import resplit_attention
from rooflens.model.ops.op import Op
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.steps import Step

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario


class UnsplitDecode(Optimization):
    name = "unsplit-decode"
    summary = "switch Flash-Decoding off: decode attention reaches blocks/SMs of HBM bandwidth"
    citation = "Dao, Haziza, Massa, Sizov 2023, Flash-Decoding for long-context inference"
    order = 33  # table transform, right after flash-decoding
    params: ClassVar[dict[str, Param]] = {}
    switches_off: ClassVar[str] = "Flash-Decoding"

    def ops(self, ops: list[Op], sc: Scenario, step: Step) -> list[Op]:
        return resplit_attention(ops, lambda op: 1.0, sc.gpu.sm_count)
