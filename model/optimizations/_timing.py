"""Step times on arrays: what the `timing` hook of an optimization transforms.

`Pipeline.predict` prices one scenario; the capacity planner (model/planner/curves.py) prices
whole grids of batch sizes, KV lengths and prompt lengths in one call. Optimizations that change
the step structure (draft-and-verify decoding, a prompt compressor, weights streamed over PCIe)
express that change once, in `Optimization.timing(StepTiming, sc, pipeline)`, on numpy arrays;
their scalar `result` hook builds a `StepTiming` from the prediction (`scalar_timing`), calls
`timing`, and writes the numbers back. Both paths so share one formula.

A decode step of `batch` sequences at KV positions `kv_lens` (step i attends over P + i
positions, as `Pipeline.decode_kv_lens`) takes `decode_step_s` and gives every sequence
`tokens_per_step` tokens, feeding the target `rows_per_sequence` new tokens per sequence (the
verification width); the time per output token is their ratio. Prefill of `prefill_batch`
prompts of `prompt_tokens` (what the target sees; `prompt_tokens_in` is what the request sent)
takes `prefill_s` (TTFT).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from model.ops import Num
from model.pricing import PricedOp, step_time_s

if TYPE_CHECKING:
    from model.pipeline import Pipeline, Prediction


@dataclass(frozen=True)
class StepTiming:
    batch: Num  # sequences per decode step
    kv_lens: Num  # positions attended by each decode step (P + i)
    prefill_batch: Num  # prompts per prefill step
    prompt_tokens: Num  # prompt tokens the target prefills
    prompt_tokens_in: Num  # prompt tokens the request carried (before prompt compression)
    prefill_priced: list[PricedOp]
    prefill_s: Num  # time to first token
    decode_priced: list[PricedOp]
    decode_step_s: Num  # one decode step, or one draft-and-verify iteration
    tokens_per_step: float = 1.0  # tokens each sequence gains per step (τ)
    rows_per_sequence: float = 1.0  # new tokens per sequence the target step is fed (width)

    @property
    def tpot_s(self) -> Num:
        """Time per output token at each KV length."""
        return self.decode_step_s / self.tokens_per_step


def scalar_timing(
    pred: Prediction, pipeline: Pipeline, prompt_tokens_in: float = 0.0
) -> StepTiming:
    """The timing of a scalar prediction: its prefill, its decode steps at every KV length
    `Pipeline.predict` priced (P + 1 when there are none), as its `result` hooks see them."""
    w = pipeline.scenario.workload
    kv_lens = pipeline.decode_kv_lens()
    if not kv_lens.size:
        kv_lens = np.array([w.prompt_len + 1.0])
    return StepTiming(
        batch=float(w.batch),
        kv_lens=kv_lens,
        prefill_batch=float(w.batch),
        prompt_tokens=float(w.prompt_len),
        prompt_tokens_in=prompt_tokens_in or float(w.prompt_len),
        prefill_priced=pred.prefill.priced,
        prefill_s=pred.ttft_s,
        decode_priced=pred.decode.priced,
        decode_step_s=step_time_s(pred.decode.priced),
    )
