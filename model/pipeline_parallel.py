"""Pipeline parallelism's step timing: pp stages of n_layers/pp layers each, m micro-batches.

The operator table of a step is a full pass through every stage (all layers, one GPU's TP slice
of each) plus pp − 1 activation sends (`pp.send_recv`, model/ops.py). With the B sequences cut
into m micro-batches of B/m, and t the pass time of one micro-batch without its sends, h one
send, a stage takes s = t/pp + h (stages are equal: layers divide evenly):

- Prefill (GPipe schedule, Huang et al. 2019): the last micro-batch leaves the last stage after
  (m + pp − 1) stage slots, so TTFT = t + (pp − 1)·h + (m − 1)·s; the idle "bubble" share is
  (pp − 1)/(m + pp − 1).
- Decode: a micro-batch's next token can start once its previous token has left the last stage
  and the first stage has served the other m − 1 micro-batches, so every sequence gets a token
  each max(t + (pp − 1)·h, m·s) (vLLM's pp virtual engines; Narayanan et al. 2021 §2.2).

m = 1 is the plain pass (PP adds memory capacity, never speed); m = pp keeps every stage busy
in decode. The default is m = min(pp, B); `--opt pp-microbatches:n=M` sets it.
"""

from __future__ import annotations

import numpy as np

from model.ops import Num
from model.pricing import PricedOp, step_time_s
from model.steps import Prediction, Step, StepPricer, phase_result, with_updates


def microbatches(pipeline: StepPricer) -> int:
    sc = pipeline.scenario
    chosen = sc.applied.pp_microbatches
    return max(1, min(chosen or sc.parallel.pp, sc.workload.batch))


def _pass_and_hop(priced: list[PricedOp], pp: int) -> tuple[Num, Num]:
    """(pass time without stage sends, one send) of a priced step."""
    sends = [p for p in priced if p.op.name == "pp.send_recv"]
    hop: Num = sum((p.total_s for p in sends), 0.0) / (pp - 1)
    return step_time_s(priced) - hop * (pp - 1), hop


def stage_times(t_pass: Num, hop: Num, pp: int, m: int) -> tuple[Num, Num]:
    """(time until the last of m micro-batches is through, per-token cycle in steady decode)."""
    slot = t_pass / pp + hop
    through = t_pass + (pp - 1) * hop
    return through + (m - 1) * slot, np.maximum(through, m * slot)


def apply_pipeline_parallel(pred: Prediction, pipeline: StepPricer) -> Prediction:
    """Re-time a prediction for pp stages and m micro-batches (identity when pp = 1)."""
    sc = pred.scenario
    pp, w = sc.parallel.pp, sc.workload
    if pp == 1:
        return pred
    m = microbatches(pipeline)
    B, P = float(w.batch) / m, float(w.prompt_len)
    prefill = pipeline.price_step(Step("prefill", B, P, P))
    ttft_s, _ = stage_times(*_pass_and_hop(prefill, pp), pp, m)
    kv_lens = pipeline.decode_kv_lens()
    decode = pipeline.price_step(Step("decode", B, 1.0, kv_lens if kv_lens.size else P + 1.0))
    _, cycle_s = stage_times(*_pass_and_hop(decode, pp), pp, m)
    tpot_s = float(np.mean(cycle_s)) if kv_lens.size else 0.0
    ttft_s = float(ttft_s)
    bubble = (pp - 1) / (m + pp - 1)
    note = (
        f"pipeline parallel: {pp} stages, {m} micro-batch(es) of {B:g} sequences; "
        f"prefill bubble {bubble:.0%} of stage time; per-op figures are one micro-batch's pass"
    )
    return with_updates(
        pred,
        prefill=phase_result("prefill", prefill, ttft_s),
        decode=phase_result("decode", decode, tpot_s),
        ttft_s=ttft_s,
        tpot_s=tpot_s,
        e2e_s=ttft_s + tpot_s * (w.output_len - 1),
        notes=[*pred.notes, note],
    )
