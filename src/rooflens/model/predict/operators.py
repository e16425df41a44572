"""The operator table of one step as a scenario's optimizations leave it: the default table
(model/ops/table.py `build_ops`) passed through each optimization's `ops` hook, in order. The
pipeline prices it (model/predict/predictor.py); memory reads its live tensors
(model/predict/memory.py), so memory never calls back into the pipeline."""

from __future__ import annotations

from collections.abc import Sequence

from rooflens.model.ops.op import Op
from rooflens.model.ops.table import build_ops
from rooflens.model.optimizations.base import Optimization
from rooflens.model.predict.scenario import Scenario
from rooflens.model.predict.steps import Step


def step_ops(sc: Scenario, opts: Sequence[Optimization], step: Step) -> list[Op]:
    """The rows of `step` under `opts` (already in their hook order, `base.ordered`)."""
    ops = build_ops(sc, step.phase, step.B, step.T, step.L, step.lm_tokens)
    for opt in opts:
        ops = opt.ops(ops, sc, step)
    return ops
