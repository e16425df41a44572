"""The nearest feasible relaxation of an infeasible plan (model/planner/relax.py), checked by a
second route: full re-plans at the loosened SLOs. Exactly at them (or ×1.001) a plan exists,
and it costs what the relaxation said; with the binding SLO at ×0.99 of its loosened value
(the others as asked) nothing is feasible. Also: the infeasible answer is fast by default."""

from __future__ import annotations

import json

import pytest

import rooflens.cli as cli
from rooflens.model.planner.explain import CHEAP_SWEEP_GROUPS
from rooflens.model.planner.plan import plan
from rooflens.model.planner.relax import SLO_METRICS
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.workload import SLO, LengthDist, ServingWorkload

SPACE = SweepSpace(model="llama-3-8b", gpus=("l4", "h100-sxm"), tp=(1, 2, 4), max_gpus=16)


def workload(**slo: float) -> ServingWorkload:
    return ServingWorkload(rate_per_s=4.0, prompt=LengthDist.parse("800"),
                           output=LengthDist.parse("200"), slo=SLO(**slo))  # fmt: skip


def replan(w: ServingWorkload, **slo: float | None):  # type: ignore[no-untyped-def]
    loosened = w.model_copy(update={"slo": w.slo.model_copy(update=slo)})
    return plan(SPACE, loosened, simulate_requests=0, alternatives=False)


CASES = {
    "tpot": dict(ttft_p99_s=2.0, tpot_p99_s=0.002),  # TPOT alone binds
    "ttft": dict(ttft_p99_s=0.004, tpot_p99_s=0.2),  # TTFT alone binds
    "both": dict(ttft_p99_s=0.004, tpot_p99_s=0.002),
    "tpot mean": dict(ttft_p99_s=2.0, tpot_mean_s=0.002),  # a mean SLO, the same way
}


@pytest.mark.parametrize("case", CASES)
def test_relaxation_is_the_smallest_loosening_that_admits_a_plan(case: str) -> None:
    w = workload(**CASES[case])
    p = plan(SPACE, w, simulate_requests=0, alternatives=False)
    assert p.recommended is None and p.relaxation is not None
    relax = p.relaxation
    loosen = {x["slo"]: x for x in relax["loosen"]}
    names = {"tpot": {"tpot_p99_s"}, "ttft": {"ttft_p99_s"}, "tpot mean": {"tpot_mean_s"}}.get(case)
    assert names is None or set(loosen) == names  # only the binding SLO is loosened
    for x in loosen.values():
        assert x["to_s"] > x["from_s"] and x["factor"] == pytest.approx(x["to_s"] / x["from_s"])
    assert max(x["factor"] for x in loosen.values()) == pytest.approx(relax["ratio"])
    to = {k: x["to_s"] for k, x in loosen.items()}
    # exactly at the loosened SLOs: a full re-plan recommends the relaxation's cheapest plan
    exact = replan(w, **to).recommended
    assert exact is not None
    assert exact["cost_per_hour"] == pytest.approx(relax["cheapest"]["cost_per_hour"])
    # slightly above: feasible, and never dearer
    above = replan(w, **{k: v * 1.001 for k, v in to.items()}).recommended
    assert above is not None and above["cost_per_hour"] <= exact["cost_per_hour"] + 1e-9
    # the binding SLO slightly below its loosened value, the others as asked: still infeasible
    binding = max(loosen.values(), key=lambda x: x["factor"])
    below = replan(w, **{binding["slo"]: binding["to_s"] * 0.99})
    assert below.recommended is None


def test_nearest_miss_is_the_relaxations_configuration() -> None:
    p = plan(SPACE, workload(**CASES["tpot"]), simulate_requests=0, alternatives=False)
    text = "\n".join(p.explanation)
    miss = p.relaxation["nearest"]
    assert all(miss["slo_ratio"] <= r + 1e-12 for r in p.sweep.rows["slo_ratio"])
    line = next(s for s in p.explanation if s.startswith("Nearest miss"))
    assert f"{miss['slo_ratio']:.3g}×" in line
    assert "Nearest feasible relaxation: loosen TPOT p99 from 2 ms to" in text
    assert "--explain-alternatives" in text and not p.alternatives


def test_relaxed_rows_report_every_slo_metric() -> None:
    p = plan(SPACE, workload(**CASES["both"]), simulate_requests=0, alternatives=False)
    assert p.relaxation is not None
    assert all(key in p.relaxation["nearest"] for key, _, _ in SLO_METRICS)


@pytest.mark.slow
def test_no_relaxation_when_nothing_fits(capsys) -> None:  # type: ignore[no-untyped-def]
    code = cli.main(["plan", "--model", "llama-3-70b", "--gpus", "l4", "--max-gpus", "1",
                     "--rate", "1", "--tpot-slo", "0.05", "--sim-requests", "0",
                     "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == cli.EXIT_DOES_NOT_FIT and out["relaxation"] is None
    assert out["alternatives"]  # nothing fits, the first sweep is small: re-plans run anyway


@pytest.mark.slow
def test_a_large_first_sweep_leaves_the_re_plans_to_the_flag(capsys) -> None:  # type: ignore[no-untyped-def]
    # nothing fits a 70B model on one 24-48 GB GPU of nine types: 36 groups priced, over
    # CHEAP_SWEEP_GROUPS, so the answer names the flag instead, whatever the machine's speed
    gpus = "l4,a10,a10g,rtx-3090,rtx-4090,a40,l40s,v100-sxm-32gb,a100-sxm-40gb"
    argv = ["plan", "--model", "llama-3-70b", "--gpus", gpus, "--max-gpus", "1", "--rate", "1",
            "--tpot-slo", "0.05", "--sim-requests", "0", "--json"]  # fmt: skip
    code = cli.main(argv)
    out = json.loads(capsys.readouterr().out)
    small = ["plan", "--model", "llama-3-70b", "--gpus", "l4", "--max-gpus", "1", "--rate", "1",
             "--tpot-slo", "0.05", "--sim-requests", "0", "--json"]  # fmt: skip
    assert code == cli.EXIT_DOES_NOT_FIT and out["relaxation"] is None
    assert out["n_groups_priced"] > CHEAP_SWEEP_GROUPS and not out["alternatives"]
    assert any("--explain-alternatives" in line for line in out["explanation"])
    cli.main(small)
    assert json.loads(capsys.readouterr().out)["n_groups_priced"] <= CHEAP_SWEEP_GROUPS


@pytest.mark.slow
def test_explain_alternatives_flag_forces_the_re_plans(capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["plan", "--model", "llama-3-8b", "--gpus", "h100-sxm", "--max-gpus", "8",
            "--tp", "1,2", "--rate", "4", "--prompt-len", "800", "--output-len", "200",
            "--tpot-slo", "0.002", "--sim-requests", "0", "--json"]  # fmt: skip
    assert cli.main(argv) == cli.EXIT_DOES_NOT_FIT
    quick = json.loads(capsys.readouterr().out)
    assert quick["relaxation"] and not quick["alternatives"]
    assert cli.main([*argv, "--explain-alternatives"]) == cli.EXIT_DOES_NOT_FIT
    full = json.loads(capsys.readouterr().out)
    assert full["alternatives"] and full["relaxation"] == quick["relaxation"]
