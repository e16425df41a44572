"""End-to-end plans: the recommendation re-checked through `rooflens predict`, monotonic in
rate and SLO (analytical and simulation-checked), the simulation-checked recommendation against
a brute-force scan, the infeasible case explained, the JSON contract, the HTML report."""

from __future__ import annotations

import json

import numpy as np
import pytest

import rooflens.cli as cli
from rooflens.model.planner.check import RANK, check_by_simulation
from rooflens.model.planner.grid import classify, configs, evaluate, record
from rooflens.model.planner.plan import cheapest, plan
from rooflens.model.planner.serving import LengthStats
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.sweep import run_sweep
from rooflens.model.planner.workload import SLO, LengthDist, ServingWorkload

SMALL = dict(model="llama-3-8b", gpus=("l4", "a10g", "h100-sxm"), tp=(1, 2, 4),
             max_gpus=32)  # fmt: skip


def workload(rate: float, ttft: float = 1.0, tpot: float = 0.05) -> ServingWorkload:
    slo = SLO(ttft_p99_s=ttft, tpot_p99_s=tpot)
    return ServingWorkload(rate_per_s=rate, prompt=LengthDist.parse("800"),
                           output=LengthDist.parse("200"), slo=slo)  # fmt: skip


def predict_json(capsys, *argv: str) -> dict:  # type: ignore[no-untyped-def]
    assert cli.main(["predict", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_recommendation_meets_slos_in_rooflens_predict(capsys) -> None:  # type: ignore[no-untyped-def]
    w = workload(6.0, ttft=0.5, tpot=0.03)
    p = plan(SweepSpace(**SMALL), w, simulate_requests=0)
    r = p.recommended
    assert r is not None
    common = ["--model", "llama-3-8b", "--gpu", r["gpu"], "--prompt-len", "800", "--output-len",
              "200", "--weight-dtype", r["weight_dtype"], "--act-dtype", r["act_dtype"],
              "--kv-dtype", r["kv_dtype"], "--tp", str(r["tp"]), "--profile", "calibrated",
              "--prefill-chunk", "2048"]  # fmt: skip
    alone = predict_json(capsys, *common, "--batch", "1")
    assert alone["ttft_s"] <= w.slo.ttft_p99_s  # one prompt's prefill fits the TTFT SLO
    full = predict_json(capsys, *common, "--batch", str(r["batch"]))
    assert full["tpot_s"] <= w.slo.tpot_p99_s  # a full batch still meets the TPOT SLO
    assert full["memory"]["fits"]
    assert r["ttft_p99_s"] >= alone["ttft_s"] and r["tpot_p99_s"] >= full["tpot_s"]


@pytest.mark.slow
@pytest.mark.parametrize("sim", [0, 300])
def test_more_load_never_fewer_gpus(sim: int) -> None:
    space = SweepSpace(**{**SMALL, "gpus": ("h100-sxm",), "max_gpus": 64})
    counts = []
    for rate in (1, 10, 40, 100, 200, 400):
        p = plan(space, workload(rate), simulate_requests=sim, explain=False,
                 max_simulated_pareto=0)  # fmt: skip
        assert p.verified is (True if sim else None)
        counts.append(p.recommended["n_gpus"] if p.recommended else 10**9)
    assert counts == sorted(counts) and counts[0] < counts[-1]


def test_more_load_never_cheaper_across_gpu_types() -> None:
    costs = []
    for rate in (1, 4, 16):
        r = plan(
            SweepSpace(**SMALL), workload(rate), simulate_requests=0, explain=False
        ).recommended
        costs.append(r["cost_per_hour"])
    assert costs == sorted(costs)


@pytest.mark.slow
@pytest.mark.parametrize("sim", [0, 300])
def test_tighter_slo_never_cheaper(sim: int) -> None:
    costs = []
    for tpot in (0.2, 0.05, 0.025, 0.015, 0.01):
        r = plan(SweepSpace(**SMALL), workload(8.0, tpot=tpot), simulate_requests=sim,
                 explain=False, max_simulated_pareto=0).recommended  # fmt: skip
        costs.append(r["cost_per_hour"] if r else float("inf"))
    assert costs == sorted(costs) and costs[0] < costs[-1]


# Heavy-tailed lengths on small GPUs: the analytical cheapest often fails the simulation.
TAIL_SPACE = SweepSpace(model="llama-3-8b", gpus=("a10g", "l4"), tp=(1, 2), max_gpus=16,
                        weight_dtypes=("fp8", "bf16"), kv_dtypes=("fp8",))  # fmt: skip


def tail_workload(rate: float, ttft: float = 0.5) -> ServingWorkload:
    return ServingWorkload(rate_per_s=rate, prompt=LengthDist.parse("1000", 4000),
                           output=LengthDist.parse("250", 1000),
                           slo=SLO(ttft_p99_s=ttft, tpot_p99_s=0.05))  # fmt: skip


@pytest.mark.slow
def test_simulated_recommendation_is_monotone_in_rate_and_slo() -> None:
    rejected = 0
    by_rate = []
    for rate in (1, 2, 4, 8, 16):
        p = plan(TAIL_SPACE, tail_workload(rate), simulate_requests=300, explain=False,
                 max_simulated_pareto=0)  # fmt: skip
        rejected += sum(s["role"] == "rejected by simulation" for s in p.simulations)
        by_rate.append(p.recommended["cost_per_hour"] if p.verified else float("inf"))
    by_slo = []
    # at 1 request/s the tight TTFT SLOs (0.35, 0.3 s) are where the tail simulation overturns
    # the analytical pick (with the 2026-11-25 refit, rate 4 no longer produces such a case)
    for ttft in (2.0, 0.7, 0.5, 0.4, 0.35, 0.3):
        p = plan(TAIL_SPACE, tail_workload(1, ttft), simulate_requests=300, explain=False,
                 max_simulated_pareto=0)  # fmt: skip
        rejected += sum(s["role"] == "rejected by simulation" for s in p.simulations)
        by_slo.append(p.recommended["cost_per_hour"] if p.verified else float("inf"))
    assert rejected > 0  # the simulation did overturn analytical choices on the way
    assert by_rate == sorted(by_rate) and by_slo == sorted(by_slo)


def test_recommendation_is_the_cheapest_configuration_passing_both_checks() -> None:
    """Second route: every analytically feasible configuration of the whole grid, sorted by
    cost and simulated in that order; the first that passes is the plan's recommendation."""
    # a case where the analytical cheapest fails the simulation (0.35 s until the 2026-11-25
    # eager-roof refit priced fused norms faster and its cheapest passed; 0.3 s until issue 23's
    # per-engine refit, after which no plan meets 0.3 s and 0.4 s is the case; 0.4 s until vLLM's
    # FP8 input pass paid its serialized amax per row, which lengthened the L4's FP8 prefill)
    w = tail_workload(1, 0.35)
    p = plan(TAIL_SPACE, w, simulate_requests=300, explain=False)
    assert p.verified and p.simulations[0]["role"] == "rejected by simulation"
    L = LengthStats.of(w)
    candidates = []
    for c in p.sweep.curves.values():
        for mode in TAIL_SPACE.modes:
            grid = configs(c, TAIL_SPACE, mode)
            m, cap = evaluate(c, TAIL_SPACE, w, L, mode, grid)
            for j in np.flatnonzero(classify(m, cap, w) == 4):
                candidates.append(record(c, mode, grid, m, cap, int(j), 4, w, L))
    candidates.sort(key=lambda r: tuple(r[k] for k in RANK))
    assert candidates[0]["cost_per_hour"] == cheapest(p.sweep.feasible)["cost_per_hour"]
    for row in candidates:
        sim = check_by_simulation([("", row)], p.sweep, TAIL_SPACE, w, 300, 0)[0]
        if not sim["sim_misses_slo"]:
            break
    keys = ("gpu", "mode", "n_gpus", "tp", "weight_dtype", "kv_dtype", "batch", "prefill_replicas")
    assert {k: row[k] for k in keys} == {k: p.recommended[k] for k in keys}


@pytest.mark.slow
def test_infeasible_request_explains_nearest_alternatives(capsys) -> None:  # type: ignore[no-untyped-def]
    code = cli.main(["plan", "--model", "llama-3-70b", "--gpus", "l4", "--max-gpus", "1",
                     "--rate", "100", "--prompt-len", "1000", "--output-len", "250",
                     "--ttft-slo", "2", "--tpot-slo", "0.05", "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == cli.EXIT_DOES_NOT_FIT and out["recommended"] is None
    assert out["rejected"]["does_not_fit"] == out["n_configs_evaluated"] > 0
    text = " ".join(out["explanation"])
    assert "does not fit in memory" in text and "Alternative" in text
    feasible = [a for a in out["alternatives"] if a.get("feasible")]
    assert feasible and all(a["n_gpus"] > 1 for a in feasible)


def test_cli_json_contract(capsys) -> None:  # type: ignore[no-untyped-def]
    code = cli.main(["plan", "--model", "llama-3-8b", "--gpus", "h100-sxm,l40s", "--rate", "5",
                     "--prompt-len", "600", "--output-len", "150", "--ttft-slo", "1",
                     "--tpot-slo", "0.05", "--sim-requests", "300", "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    keys = {"gpu", "n_gpus", "tp", "pp", "weight_dtype", "kv_dtype", "batch", "ttft_s", "tpot_s",
            "output_tokens_per_s", "cost_per_million_tokens"}  # fmt: skip
    assert keys <= set(out["recommended"]) and all(keys <= set(p) for p in out["pareto"])
    assert set(out["rejected"]) >= {"does_not_fit", "misses_ttft", "misses_tpot"}
    assert out["n_configs_evaluated"] > 10_000 and out["elapsed_s"] > 0
    assert out["simulations"] and out["simulations"][0]["n_requests"] > 0


def test_price_override_changes_the_ranking() -> None:
    w = workload(4.0)
    base = plan(SweepSpace(**SMALL), w, simulate_requests=0, explain=False).recommended
    assert base is not None
    cheap = w.model_copy(update={"prices_usd_per_gpu_hour": {"h100-sxm": 0.01}})
    r = plan(SweepSpace(**SMALL), cheap, simulate_requests=0, explain=False).recommended
    assert r["gpu"] == "h100-sxm" and r["cost_per_hour"] < base["cost_per_hour"]


@pytest.mark.parametrize("opt", ["paged-kv", "flash-decoding"])
def test_optimizations_apply_through_the_pipeline(opt: str) -> None:
    space = SweepSpace(model="llama-3-8b", gpus=("h100-sxm",), tp=(1,), max_gpus=4)
    w = workload(4.0)
    base, with_opt = run_sweep(space, w), run_sweep(space.model_copy(update={"opts": (opt,)}), w)
    assert with_opt.n_configs == base.n_configs
    assert all(g.opts == (opt,) for g in with_opt.curves)


def test_html_report_is_self_contained_with_plotly_once(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from plotly.offline import get_plotlyjs

    out = tmp_path / "plan.html"
    code = cli.main(["plan", "--model", "llama-3-8b", "--gpus", "h100-sxm", "--rate", "5",
                     "--tp", "1", "--ttft-slo", "1", "--tpot-slo", "0.05", "--sim-requests", "0",
                     "--html", str(out), "--json"])  # fmt: skip
    capsys.readouterr()
    text = out.read_text()
    assert code == 0 and text.count(get_plotlyjs()[:300]) == 1  # the bundle, inlined once
    assert text.count("Plotly.newPlot(") == 2 and "<script src=" not in text  # two figures
    assert len(text) < len(get_plotlyjs()) + 500_000
