"""Shared arithmetic of draft-then-verify decoding (speculative, Medusa, lookahead): expected
tokens per target step, the wall-clock speedup closed form, and pricing one verification step
of `width` tokens with the roofline itself.

Verification feeds the target model `width` new tokens per sequence at once, T = width over
L + width − 1 positions with logits for every one of them (Leviathan et al. 2023 §2.3): when the
step is memory-bound the weights are read once for all `width` tokens, so it costs about one
decode step; as the batch grows it turns compute-bound and costs up to `width` steps. Pricing
the step, not assuming a cost ratio, is what makes the speedup fall with batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from rooflens.hardware.errors import RooflensError
from rooflens.model.ops.op import Num
from rooflens.model.optimizations._timing import decode_tpot_s, scalar_timing
from rooflens.model.predict.scenario import with_applied
from rooflens.model.predict.steps import (
    Prediction,
    Step,
    StepPricer,
    StepTiming,
    phase_result,
    with_updates,
)
from rooflens.model.pricing.roofline import PricedOp

if TYPE_CHECKING:
    from rooflens.model.optimizations.base import Optimization
    from rooflens.model.predict.scenario import Scenario

# Which of the target's optimizations a draft model runs with too. A draft served next to the
# target runs on the same engine and kernels: the same attention pattern (a sliding window or
# attention sinks cap its cache and attention exactly as the target's), the same quantization,
# the same attention kernels, fusion and KV layout. What reshapes or replaces the *target*
# network (pruning it, converting it to GQA, distilling it, exiting early from its layers,
# offloading its weights, its MoE routing, its pipeline stages) or the decode loop itself does
# not carry over. Every registered optimization is in exactly one of the two sets
# (tests/model/optimizations/test_drafting_pairs.py checks it), so a new one needs a decision here.
DRAFT_INHERITS = frozenset(
    {
        "quant", "sliding-window", "eager-attention", "flash-decoding", "unsplit-decode",
        "fusion", "paged-kv", "contiguous-kv", "no-kv-cache", "sparsity-2:4",
    }
)  # fmt: skip
TARGET_ONLY = frozenset(
    {
        "pp-microbatches", "prompt-compression", "distill", "prune", "gqa", "mqa",
        "early-exit", "moe", "activation-sparsity", "offload", "eager-launch",
        "speculative", "medusa", "lookahead", "continuous-batching",
    }
)  # fmt: skip


def claim_decoding(sc: Scenario, name: str) -> Scenario:
    """Mark the scenario's decode step as replaced by `name`; two such methods do not stack."""
    other = sc.applied.decoding
    if other and other != name:
        raise RooflensError(
            f"--opt {name} and --opt {other} both replace the decode step; use one of them"
        )
    return with_applied(sc, decoding=name)


def draft_pipeline(pipeline: StepPricer, draft_sc: Scenario) -> StepPricer:
    """The draft model's pipeline: its scenario (from `side_scenario`) under the target's
    optimizations that a draft inherits (DRAFT_INHERITS), so a window on the target windows the
    draft's attention and cache too."""
    inherited = [opt for opt in pipeline.opts if opt.name in DRAFT_INHERITS]
    return pipeline.for_scenario(draft_sc, inherited)


def expected_tokens(alpha: Num, gamma: Num) -> Num:
    """Tokens per target step with γ drafted tokens each accepted with probability α, the first
    rejection stopping the run, plus the target's own token: Σ_{i=0..γ} α^i
    = (1 − α^(γ+1)) / (1 − α) (Leviathan et al. 2023, eq. 1; anchors E10); γ + 1 at α = 1."""
    a = np.asarray(alpha, dtype=np.float64)
    g = np.asarray(gamma, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(a >= 1.0, g + 1.0, (1.0 - a ** (g + 1.0)) / (1.0 - a))
    return float(out) if out.ndim == 0 else out


def leviathan_speedup(alpha: Num, gamma: Num, cost_ratio: Num) -> Num:
    """Wall-clock speedup (1 − α^(γ+1)) / ((1 − α)(γ·c + 1)), c = draft step / target step,
    verification assumed to cost one target step (Leviathan et al. 2023 Thm 3.8; anchors E10)."""
    return expected_tokens(alpha, gamma) / (np.asarray(gamma) * cost_ratio + 1.0)


def price_verify(
    pipeline: StepPricer, width: int, kv_lens: Num, batch: Num | None = None
) -> list[PricedOp]:
    """One target step verifying `width` tokens per sequence after positions kv_lens − 1, for
    `batch` sequences (default: the scenario's batch; arrays welcome)."""
    B = float(pipeline.scenario.workload.batch) if batch is None else batch
    w = float(width)
    return pipeline.price_step(Step("verify", B, w, kv_lens + w - 1.0, lm_tokens=w))


def retime_with_timing(
    opt: Optimization,
    pred: Prediction,
    sc: Scenario,
    pipeline: StepPricer,
    describe: Callable[[StepTiming, float], str],
) -> Prediction:
    """A drafting optimization's `result`, defined by its vectorised `timing` hook so the
    planner's grids and `predict` share one formula; `describe(timing, decode speedup)` writes
    the note."""
    t = opt.timing(scalar_timing(pred, pipeline), sc, pipeline)
    per_token_s = decode_tpot_s(t, pipeline)
    O = pred.scenario.workload.output_len
    tpot_s = per_token_s if O > 1 else 0.0
    ttft_s = float(t.prefill_s)
    return with_updates(
        pred,
        decode=phase_result("decode", t.decode_priced, tpot_s),
        ttft_s=ttft_s,
        tpot_s=tpot_s,
        e2e_s=ttft_s + tpot_s * (O - 1),
        notes=[*pred.notes, describe(t, pred.tpot_s / per_token_s)],
        timing=t,
    )
