"""Step times on arrays: what the `timing` hook of an optimization transforms.

`Pipeline.predict` prices one scenario; the capacity planner (model/planner/curves.py) prices
whole grids of batch sizes, KV lengths and prompt lengths in one call. Optimizations that change
the step structure (draft-and-verify decoding, a prompt compressor, weights streamed over PCIe)
express that change once, in `Optimization.timing(StepTiming, sc, pipeline)`, on numpy arrays
(`StepTiming` lives in model/predict/steps.py); their scalar `result` hook builds a `StepTiming`
from the
prediction (`scalar_timing`), calls `timing`, and writes the numbers back. Both paths so share
one formula.

A decode step of `batch` sequences at KV positions `kv_lens` (step i attends over P + i
positions, as `Pipeline.decode_kv_lens`) takes `decode_step_s` and gives every sequence
`tokens_per_step` tokens, feeding the target `rows_per_sequence` new tokens per sequence (the
verification width); the time per output token is their ratio. Prefill of `prefill_batch`
prompts of `prompt_tokens` (what the target sees; `prompt_tokens_in` is what the request sent)
takes `prefill_s` (TTFT).

Under pipeline parallelism (pp > 1) a scalar prediction's decode rows are one micro-batch's pass
(model/predict/pp_schedule.py re-times it before the `result` hooks run), so `scalar_timing` hands
the hooks one micro-batch, B/m sequences, as the planner's grids do, and `decode_tpot_s` turns
the hooks' step into the GPipe decode cycle: `predict` and the planner so agree with a
step-structure optimization on top of PP too.
"""

from __future__ import annotations

import numpy as np

from rooflens.model.predict.pp_schedule import microbatches, step_cycle_s
from rooflens.model.predict.steps import Prediction, StepPricer, StepTiming
from rooflens.model.pricing.roofline import step_time_s


def scalar_timing(
    pred: Prediction, pipeline: StepPricer, prompt_tokens_in: float = 0.0
) -> StepTiming:
    """The timing of a scalar prediction: the one the previous `timing`-defined hook left
    (Prediction.timing), else its prefill and its decode steps at every KV length
    `Pipeline.predict` priced (P + 1 when there are none), as its `result` hooks see them."""
    if pred.timing is not None:
        return pred.timing
    w = pipeline.scenario.workload
    kv_lens = pipeline.decode_kv_lens()
    if not kv_lens.size:
        kv_lens = np.array([w.prompt_len + 1.0])
    m = microbatches(pipeline) if pipeline.scenario.parallel.pp > 1 else 1
    return StepTiming(
        batch=float(w.batch) / m,
        kv_lens=kv_lens,
        prefill_batch=float(w.batch),
        prompt_tokens=float(w.prompt_len),
        prompt_tokens_in=prompt_tokens_in or float(w.prompt_len),
        prefill_priced=pred.prefill.priced,
        prefill_s=pred.ttft_s,
        decode_priced=pred.decode.priced,
        decode_step_s=step_time_s(pred.decode.priced),
    )


def decode_tpot_s(t: StepTiming, pipeline: StepPricer) -> float:
    """Mean time per output token of a scalar timing's decode: its step, as the GPipe cycle of
    m micro-batches when pp > 1 (pipeline_parallel.step_cycle_s), over τ tokens per step."""
    pp = pipeline.scenario.parallel.pp
    m = microbatches(pipeline) if pp > 1 else 1
    cycle = step_cycle_s(t.decode_step_s, t.decode_priced, pp, m)
    return float(np.mean(cycle)) / t.tokens_per_step
