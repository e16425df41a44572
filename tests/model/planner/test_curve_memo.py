"""The sweep's curve memo (model/planner/sweep.py): a group's curves do not depend on the arrival
rate or the SLOs, so a re-plan at another load reuses them and gives the same plan as one priced
from scratch; anything the curves read (the lengths) prices anew."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

import rooflens.model.planner.sweep as sweep
from rooflens.model.optimizations import parse_opt
from rooflens.model.planner.curves import Group, build_curves
from rooflens.model.planner.plan import plan
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.workload import SLO, LengthDist, ServingWorkload
from rooflens.model.specs.presets import get_model

SPACE = SweepSpace(model="llama-3-8b", gpus=("l4", "h100-sxm"), tp=(1, 2), max_gpus=16)


def _load(rate: float, tpot: float, prompt: str = "800") -> ServingWorkload:
    return ServingWorkload(rate_per_s=rate, prompt=LengthDist.parse(prompt),
                           output=LengthDist.parse("200"),
                           slo=SLO(ttft_p99_s=1.0, tpot_p99_s=tpot))  # fmt: skip


def _plan(w: ServingWorkload) -> dict[str, Any]:
    out = plan(SPACE, w, simulate_requests=0).to_dict()
    for key in ("elapsed_s", "sweep_s"):
        out.pop(key, None)
    return out


def test_a_replan_at_another_load_reuses_the_curves_and_equals_a_fresh_plan() -> None:
    sweep._CURVES.clear()
    _plan(_load(4.0, 0.05))
    held = len(sweep._CURVES)
    assert held > 0
    warm = _plan(_load(9.0, 0.03))  # another rate and SLO: no new curves
    assert len(sweep._CURVES) == held
    sweep._CURVES.clear()
    assert _plan(_load(9.0, 0.03)) == warm  # priced from scratch: the same plan
    _plan(_load(9.0, 0.03, prompt="2000"))  # other lengths: other curves
    assert len(sweep._CURVES) == 2 * held


def test_curves_do_not_read_the_rate_or_the_slos() -> None:
    # the memo's premise, by a second route: two loads differing only there price alike
    spec, group = get_model("llama-3-8b"), Group("h100-sxm", 1, 1, 1, "bf16", "bf16", "bf16", ())
    a, b = (build_curves(spec, group, w, [parse_opt(o) for o in group.opts], profile="ideal",
                         chunk_tokens=2048, overhead_bytes=1e9)
            for w in (_load(1.0, 0.01), _load(50.0, 0.2)))  # fmt: skip
    assert set(sweep.NOT_IN_CURVES) == {"rate_per_s", "slo"}
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        assert np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y, f.name
