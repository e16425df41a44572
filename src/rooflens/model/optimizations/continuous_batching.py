"""`continuous-batching:spread=S`: static against continuous (iteration-level) batching, and the
critical batch size at which decode turns compute-bound.

Mechanism (Yu et al. 2022, Orca, OSDI; Kwon et al. 2023, vLLM): a static batch holds all B
slots until its longest request finishes, so slots whose request ended early idle; continuous
batching schedules per iteration and refills a slot as soon as its request ends, so every
decode step does B useful tokens. rooflens's prediction (every slot busy on a request of mean
length O) is the continuous steady state; this optimization reports what static batching loses.

Formulas. Output lengths uniform on [O(1 − S), O(1 + S)] (mean O). The longest of B has mean
O(1 − S) + 2SO·B/(B + 1) (order statistics of the uniform distribution), so
    static:      B·O tokens per TTFT + (E[max] − 1)·TPOT
    continuous:  B·O tokens per TTFT + (O − 1)·TPOT
Critical batch size: the smallest B at which the decode step's GEMMs are compute-bound, found by
pricing the step over a grid of B in one vectorised call; for 16-bit weights it is ≈ the ridge
point in FLOP/byte (a bf16 decode GEMM does ≈ 2B FLOPs per 2-byte weight: intensity ≈ B; JAX
scaling book, "inference"; anchors E8: ≈ 153 on A100), scaled by bytes-per-weight / 2 for
quantized weights and larger for MoE (each expert sees ≈ k·B/E tokens).
The prediction's numbers are unchanged (S = 0 and any S alike); the comparison goes to notes.
Limits: arrivals are taken as always available (a saturated server); prefill interleaving is not
modelled separately.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.steps import Prediction, Step, StepPricer
from rooflens.model.pricing.roofline import PricedOp

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario

MAX_CRITICAL_BATCH = 16384


def expected_longest(output_len: float, spread: float, batch: float) -> float:
    """Mean of the longest of B lengths uniform on [O(1 − S), O(1 + S)]."""
    return output_len * (1.0 - spread) + 2.0 * spread * output_len * batch / (batch + 1.0)


def critical_batch(pipeline: StepPricer) -> int:
    """Smallest batch whose decode GEMMs are compute-bound (0 if none up to the grid's end)."""
    w = pipeline.scenario.workload
    batches = np.arange(1, MAX_CRITICAL_BATCH + 1, dtype=np.float64)
    L = float(w.prompt_len + w.output_len // 2)
    priced = pipeline.price_step(Step("decode", batches, 1.0, L))
    gemms: list[PricedOp] = [p for p in priced if p.op.kind == "gemm"]
    compute = sum((np.broadcast_to(p.compute_s, batches.shape) * p.op.count for p in gemms), 0.0)
    memory = sum((np.broadcast_to(p.memory_s, batches.shape) * p.op.count for p in gemms), 0.0)
    bound = np.flatnonzero(np.asarray(compute) >= np.asarray(memory))
    return int(batches[bound[0]]) if bound.size else 0


class ContinuousBatching(Optimization):
    name = "continuous-batching"
    summary = "static vs continuous batching (slots refilled per step); critical batch size"
    citation = "Yu et al. 2022 (OSDI), Orca: iteration-level scheduling; JAX scaling book"
    order = 90
    params: ClassVar[dict[str, Param]] = {
        "spread": Param(
            float, 0.5, "output lengths uniform on O·(1 ± spread), 0..1", lo=0, hi=1, hi_open=True
        ),
    }

    def result(self, pred: Prediction, sc: Scenario, pipeline: StepPricer) -> Prediction:
        w, gpu = sc.workload, sc.gpu
        B, O = float(w.batch), float(w.output_len)
        longest = expected_longest(O, self["spread"], B)
        static_s = pred.ttft_s + (longest - 1.0) * pred.tpot_s
        continuous_s = pred.ttft_s + (O - 1.0) * pred.tpot_s
        gain = static_s / continuous_s
        crit = critical_batch(pipeline)
        ridge = gpu.ridge_point("bf16")
        crit_text = f"{crit}" if crit else f"> {MAX_CRITICAL_BATCH}"
        note = (
            f"batching (spread ±{self['spread']:.0%}): static {B * O / static_s:.4g} tok/s "
            f"(waits for the longest of {w.batch}: {longest:.0f} tokens) vs continuous "
            f"{B * O / continuous_s:.4g} tok/s ({gain:.2f}x); decode turns compute-bound at "
            f"batch {crit_text} (ridge point {ridge:.0f} FLOP/byte on {gpu.id})"
        )
        return replace(pred, notes=[*pred.notes, note])
