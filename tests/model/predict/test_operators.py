"""A step's rows under the optimizations (model/predict/operators.py): the default table when
there are none, and each optimization's `ops` hook applied in order on it (the second route
calls the hooks by hand); the pipeline and memory read the same rows."""

from __future__ import annotations

from rooflens.model.ops.table import build_ops
from rooflens.model.optimizations import parse_opt
from rooflens.model.optimizations.base import ordered
from rooflens.model.predict.api import make_pipeline, make_scenario
from rooflens.model.predict.operators import step_ops
from rooflens.model.predict.steps import Step

STEP = Step("decode", 4.0, 1.0, 1000.0)


def _rows(ops):  # type: ignore[no-untyped-def]
    return [(o.name, o.count, float(o.flops), float(o.bytes)) for o in ops]


def test_no_optimizations_is_the_default_table() -> None:
    sc = make_scenario("llama-3-8b", "h100-sxm", batch=4)
    assert _rows(step_ops(sc, [], STEP)) == _rows(build_ops(sc, "decode", 4.0, 1.0, 1000.0))


def test_hooks_apply_in_order_on_the_default_table() -> None:
    sc = make_scenario("llama-3-8b", "h100-sxm", batch=4)
    opts = ordered([parse_opt("sparsity-2:4"), parse_opt("eager-attention")])
    by_hand = build_ops(sc, "decode", 4.0, 1.0, 1000.0)
    for opt in opts:
        by_hand = opt.ops(by_hand, sc, STEP)
    assert _rows(step_ops(sc, opts, STEP)) == _rows(by_hand)
    assert _rows(by_hand) != _rows(build_ops(sc, "decode", 4.0, 1.0, 1000.0))  # they act


def test_the_pipeline_prices_these_rows() -> None:
    pipe = make_pipeline(make_scenario("llama-3-8b", "h100-sxm", batch=4), ["sparsity-2:4"])
    assert _rows(pipe.step_ops(STEP)) == _rows(step_ops(pipe.scenario, pipe.opts, STEP))
