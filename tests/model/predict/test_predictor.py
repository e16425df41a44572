"""The pipeline (model/predict/predictor.py): TTFT, TPOT and end-to-end time against a second
route that prices the operator table directly (model/ops/table.py, model/pricing/roofline.py),
the optimizations' hooks applied in their order, and pricers for other scenarios."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.hardware.profiles import get_profile
from rooflens.model.ops.table import build_ops
from rooflens.model.optimizations import parse_opt
from rooflens.model.predict.api import make_pipeline, make_scenario
from rooflens.model.predict.predictor import Pipeline
from rooflens.model.pricing.roofline import price_ops, step_time_s


def _direct(sc, phase, B, T, L):  # type: ignore[no-untyped-def]
    return step_time_s(price_ops(build_ops(sc, phase, B, T, L), sc.system,
                                 get_profile(sc.profile, sc.gpu)))  # fmt: skip


@pytest.mark.parametrize("profile", ["ideal", "calibrated"])
def test_times_are_the_table_priced_directly(profile: str) -> None:
    P, O, B = 300, 7, 3
    sc = make_scenario("llama-3-8b", "h100-sxm", batch=B, prompt_len=P, output_len=O,
                       profile=profile)  # fmt: skip
    pred = Pipeline(sc).predict()
    assert pred.ttft_s == pytest.approx(float(_direct(sc, "prefill", B, P, P)), rel=1e-12)
    steps = [float(_direct(sc, "decode", B, 1.0, P + i)) for i in range(1, O)]
    assert pred.tpot_s == pytest.approx(np.mean(steps), rel=1e-12)
    # e2e = TTFT + (O − 1) · TPOT: the first token comes with the prefill
    assert pred.e2e_s == pytest.approx(pred.ttft_s + (O - 1) * pred.tpot_s, rel=1e-12)


def test_one_output_token_is_the_prefill_alone() -> None:
    pred = Pipeline(make_scenario("llama-3-8b", "h100-sxm", output_len=1)).predict()
    assert pred.tpot_s == 0.0 and pred.e2e_s == pred.ttft_s


def test_optimizations_run_in_their_order_whatever_the_order_given() -> None:
    sc = make_scenario("llama-3-8b", "h100-sxm", batch=4)
    names = ["paged-kv", "flash-decoding", "quant:scheme=awq"]
    given = Pipeline(sc, [parse_opt(n) for n in names])
    reversed_ = Pipeline(sc, [parse_opt(n) for n in reversed(names)])
    assert [o.name for o in given.opts] == [o.name for o in reversed_.opts]
    assert [o.order for o in given.opts] == sorted(o.order for o in given.opts)
    assert given.predict().tpot_s == reversed_.predict().tpot_s


def test_a_pricer_for_another_scenario_is_a_fresh_pipeline() -> None:
    target = make_pipeline(make_scenario("llama-3-70b", "h100-sxm", tp=4), ["flash-decoding"])
    draft_sc = make_scenario("llama-3-8b", "h100-sxm")
    draft = target.for_scenario(draft_sc, target.opts)
    assert isinstance(draft, Pipeline) and draft.scenario == draft_sc
    assert draft.predict().tpot_s == make_pipeline(draft_sc, ["flash-decoding"]).predict().tpot_s


def test_a_scenario_built_with_optimizations_is_priced_with_them() -> None:
    """`make_scenario(..., opts=...)` records them and `run` applies them: the same prediction as
    naming them to `run`, and not the plain one (an API user once got the plain step silently)."""
    from rooflens.model.predict.api import run

    opts = ["quant:scheme=awq", "fusion"]
    built = make_scenario("llama-3-8b", "h100-sxm", batch=4, opts=tuple(opts))
    plain = make_scenario("llama-3-8b", "h100-sxm", batch=4)
    assert built.opts == tuple(opts)
    given = run(plain, opts)
    assert run(built).tpot_s == given.tpot_s
    assert run(built).ttft_s == given.ttft_s
    assert run(built).tpot_s < 0.7 * run(plain).tpot_s  # AWQ: a quarter of the weight bytes
    # an analysis may still price the scenario under a subset of its optimizations
    assert run(built, ["fusion"]).tpot_s == run(plain, ["fusion"]).tpot_s
