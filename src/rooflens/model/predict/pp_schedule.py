"""Pipeline parallelism's step timing: pp stages of n_layers/pp layers each, m micro-batches.

The operator table of a step is a full pass through every stage (all layers, one GPU's TP slice
of each) plus pp − 1 activation sends (`pp.send_recv`, model/ops/table.py). With the B sequences cut
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

This is the one place PP's timing lives: `rooflens predict` (apply_pipeline_parallel) and the
planner (model/planner/curves.py: decode cycle and prefill; serving.py and sim.py: how long a
prompt holds a stage) both read it, and neither prices a send itself.
"""

from __future__ import annotations

import numpy as np

from rooflens.model.ops.op import Num
from rooflens.model.predict.steps import Prediction, Step, StepPricer, phase_result, with_updates
from rooflens.model.pricing.roofline import PricedOp, step_time_s


def microbatch_count(batch: Num, pp: int, chosen: int = 0) -> Num:
    """Micro-batches m the B sequences are cut into: `chosen` (--opt pp-microbatches) or pp,
    at most B and at least 1 (arrays of B welcome: the planner's grid of concurrencies)."""
    out = np.maximum(1.0, np.minimum(float(chosen or pp), batch))
    return float(out) if np.ndim(out) == 0 else out


def microbatches(pipeline: StepPricer) -> int:
    sc = pipeline.scenario
    return int(microbatch_count(sc.workload.batch, sc.parallel.pp, sc.applied.pp_microbatches))


def send_s(priced: list[PricedOp], pp: int) -> Num:
    """One stage-to-stage send of a priced step: its `pp.send_recv` rows (model/ops/table.py, the
    only place a send is priced) over their pp − 1 count; 0 when pp = 1."""
    if pp == 1:
        return 0.0
    sends = [p for p in priced if p.op.name == "pp.send_recv"]
    total: Num = sum((p.total_s for p in sends), 0.0)
    return total / (pp - 1)


def stage_share_s(pass_s: Num, pp: int) -> Num:
    """The time one stage spends on a pass of the whole layer stack: pass/pp (Scenario checks
    that pp divides the layers, so stages are equal)."""
    return pass_s / pp


def stage_times(t_pass: Num, hop: Num, pp: int, m: Num) -> tuple[Num, Num]:
    """(time until the last of m micro-batches is through, per-token cycle in steady decode)."""
    slot = stage_share_s(t_pass, pp) + hop
    through = t_pass + (pp - 1) * hop
    return through + (m - 1) * slot, np.maximum(through, m * slot)


def step_cycle_s(step_s: Num, priced: list[PricedOp], pp: int, m: Num) -> Num:
    """Per-token cycle of steady decode when one micro-batch's step (its pp − 1 sends
    included, as `priced` holds them) takes `step_s`: stage_times on (step − sends, one send)."""
    hop = send_s(priced, pp)
    return stage_times(step_s - (pp - 1) * hop, hop, pp, m)[1]


def stage_hold_s(through_s: Num, hop_s: Num, pp: int) -> Num:
    """How long one micro-batch that takes `through_s` across all stages (sends included)
    holds the first stage, i.e. how soon the next can enter: a slot, (through − (pp − 1)·h)/pp
    + h. The planner queues prompts' prefills on it."""
    return stage_share_s(through_s - (pp - 1) * hop_s, pp) + hop_s


def apply_pipeline_parallel(pred: Prediction, pipeline: StepPricer) -> Prediction:
    """Re-time a prediction for pp stages and m micro-batches (identity when pp = 1)."""
    sc = pred.scenario
    pp, w = sc.parallel.pp, sc.workload
    if pp == 1:
        return pred
    m = microbatches(pipeline)
    B, P = float(w.batch) / m, float(w.prompt_len)
    prefill = pipeline.price_step(Step("prefill", B, P, P))
    hop = send_s(prefill, pp)
    ttft_s, _ = stage_times(step_time_s(prefill) - (pp - 1) * hop, hop, pp, m)
    kv_lens = pipeline.decode_kv_lens()
    decode = pipeline.price_step(Step("decode", B, 1.0, kv_lens if kv_lens.size else P + 1.0))
    cycle_s = step_cycle_s(step_time_s(decode), decode, pp, m)
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
