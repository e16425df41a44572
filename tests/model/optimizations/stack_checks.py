"""Helpers shared by the optimization tests: build a scenario, get a step's operator table or a
prediction with and without optimizations, and compare predictions field by field."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from rooflens.model.ops.op import Op
from rooflens.model.predict.api import make_pipeline, make_scenario
from rooflens.model.predict.scenario import Scenario
from rooflens.model.predict.steps import Prediction, Step
from rooflens.model.pricing.roofline import step_time_s


def scenario(model: str = "llama-2-7b", gpu: str = "h100-sxm", **kw: Any) -> Scenario:
    return make_scenario(model, gpu, **kw)


def step_ops(sc: Scenario, opts: Sequence[str], step: Step) -> list[Op]:
    return make_pipeline(sc, list(opts)).step_ops(step)


def step_s(sc: Scenario, opts: Sequence[str], step: Step) -> Any:
    return step_time_s(make_pipeline(sc, list(opts)).price_step(step))


def predict(sc: Scenario, opts: Sequence[str] = ()) -> Prediction:
    return make_pipeline(sc, list(opts)).predict()


def named(ops: list[Op], name: str) -> Op:
    found = [op for op in ops if op.name == name]
    assert len(found) == 1, f"{name}: {len(found)} ops"
    return found[0]


def total(ops: list[Op], field: str, kinds: Sequence[str] | None = None) -> float:
    """Σ field × count over the ops (optionally of some kinds); arrays are summed too."""
    return float(
        sum(
            np.sum(getattr(op, field)) * op.count for op in ops if kinds is None or op.kind in kinds
        )
    )


def assert_same_prediction(a: Prediction, b: Prediction) -> None:
    """Identical headline numbers, memory and operator table."""
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        assert getattr(a, key) == pytest.approx(getattr(b, key), rel=1e-12), key
    ma, mb = a.memory.to_dict(), b.memory.to_dict()
    assert ma.keys() == mb.keys()
    for key, value in ma.items():
        assert value == (pytest.approx(mb[key], rel=1e-12) if isinstance(value, float) else mb[key])
    fa, fb = a.ops_frame(), b.ops_frame()
    assert list(fa["name"]) == list(fb["name"])
    for column in ("flops", "bytes", "time_s"):
        assert fa[column].to_numpy() == pytest.approx(fb[column].to_numpy(), rel=1e-12), column


def assert_grid_prices_like_points(pipeline: Any, B: Any, L: Any) -> None:
    """The capacity planner prices (B, L) grids in one call: every hook must broadcast, so a
    B × L grid of decode steps equals pricing each point alone."""
    grid = step_time_s(pipeline.price_step(Step("decode", B, 1.0, L)))
    assert grid.shape == (B.shape[0], L.shape[1])
    for i, b in enumerate(B[:, 0]):
        for j, ell in enumerate(L[0]):
            point = step_time_s(pipeline.price_step(Step("decode", b, 1.0, ell)))
            assert grid[i, j] == pytest.approx(float(point))
