"""Step times on arrays: what the `timing` hook of an optimization transforms.

`Pipeline.predict` prices one scenario; the capacity planner (model/planner/curves.py) prices
whole grids of batch sizes, KV lengths and prompt lengths in one call. Optimizations that change
the step structure (draft-and-verify decoding, a prompt compressor, weights streamed over PCIe)
express that change once, in `Optimization.timing(StepTiming, sc, pipeline)`, on numpy arrays
(`StepTiming` lives in model/steps.py); their scalar `result` hook builds a `StepTiming` from the
prediction (`scalar_timing`), calls `timing`, and writes the numbers back. Both paths so share
one formula.

A decode step of `batch` sequences at KV positions `kv_lens` (step i attends over P + i
positions, as `Pipeline.decode_kv_lens`) takes `decode_step_s` and gives every sequence
`tokens_per_step` tokens, feeding the target `rows_per_sequence` new tokens per sequence (the
verification width); the time per output token is their ratio. Prefill of `prefill_batch`
prompts of `prompt_tokens` (what the target sees; `prompt_tokens_in` is what the request sent)
takes `prefill_s` (TTFT).
"""

from __future__ import annotations

import numpy as np

from model.pricing import step_time_s
from model.steps import Prediction, StepPricer, StepTiming


def scalar_timing(
    pred: Prediction, pipeline: StepPricer, prompt_tokens_in: float = 0.0
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
