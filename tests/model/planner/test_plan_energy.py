"""The plan's recommendation carries energy per output token, equal to the ordinary prediction
path's energy at the planned batch (model/analysis/energy.py), and says so in its explanation."""

from __future__ import annotations

import math

import pytest

from rooflens.model.analysis.energy import energy
from rooflens.model.planner.plan import plan
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.workload import SLO, LengthDist, ServingWorkload
from rooflens.model.predict.api import make_scenario, run


def test_recommendation_reports_energy_per_token() -> None:
    slo = SLO(ttft_p99_s=2.0, tpot_p99_s=0.1)
    w = ServingWorkload(rate_per_s=2.0, prompt=LengthDist.parse("512"),
                        output=LengthDist.parse("128"), slo=slo)  # fmt: skip
    space = SweepSpace(model="llama-3.1-8b", gpus=("h100-sxm",), tp=(1,), weight_dtypes=("bf16",),
                       kv_dtypes=("bf16",), profile="ideal")  # fmt: skip
    p = plan(space, w, simulate_requests=0)
    rec = p.recommended
    assert rec is not None
    sc = make_scenario("llama-3.1-8b", "h100-sxm", batch=int(rec["batch"]), prompt_len=512,
                       output_len=128, weight_dtype="bf16", act_dtype=rec["act_dtype"],
                       kv_dtype="bf16", prefill_chunk=space.chunk_tokens,
                       profile=space.profile)  # fmt: skip
    expected = energy(run(sc)).joules_per_output_token
    assert rec["joules_per_output_token"] == pytest.approx(expected, rel=1e-9)
    assert math.isclose(rec["output_tokens_per_joule"], 1 / expected)
    assert any("J per output token" in line for line in p.explanation)
