"""Goodput: the highest rate a configuration serves within every SLO (grid.goodput), checked
against a direct search, its replica scaling, the goodput-per-dollar objective, and the
simulated share of requests within the SLOs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_sim import Linear

from rooflens.model.planner.grid import classify, configs, evaluate, goodput
from rooflens.model.planner.plan import plan
from rooflens.model.planner.serving import LengthStats
from rooflens.model.planner.sim import simulate
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.sweep import run_sweep
from rooflens.model.planner.workload import SLO, LengthDist, ServingWorkload

SPACE = SweepSpace(model="llama-3-8b", gpus=("h100-sxm",), tp=(1,), weight_dtypes=("bf16",),
                   kv_dtypes=("bf16",), max_gpus=8)  # fmt: skip
W = ServingWorkload(rate_per_s=4.0, prompt=LengthDist.parse("1024"),
                    output=LengthDist.parse("256", p99=700),
                    slo=SLO(ttft_p99_s=0.5, tpot_p99_s=0.03))  # fmt: skip


def feasible_at(c, mode, grid, rate):  # type: ignore[no-untyped-def]
    m, cap = evaluate(c, SPACE, W, LengthStats.of(W), mode, grid, rate)
    return classify(m, cap, W) == 4


@pytest.mark.parametrize("mode", ["colocated", "chunked", "disaggregated"])
def test_goodput_is_the_feasibility_boundary(mode: str) -> None:
    c = next(iter(run_sweep(SPACE, W).curves.values()))
    grid = configs(c, SPACE, mode)
    g = goodput(c, SPACE, W, LengthStats.of(W), mode, grid)
    some = np.flatnonzero(g > 0)[:: max(1, np.count_nonzero(g > 0) // 40)]
    assert some.size > 5
    sub = {k: v[some] for k, v in grid.items()}
    # just below the goodput every chosen configuration meets every SLO; just above, none
    assert feasible_at(c, mode, sub, g[some] * (1 - 1e-3)).all()
    assert not feasible_at(c, mode, sub, g[some] * (1 + 1e-3)).any()


def test_disaggregated_goodput_matches_a_direct_search() -> None:
    # second route: scan the total rate on each (n_p, n_d, cap) configuration directly
    c = next(iter(run_sweep(SPACE, W).curves.values()))
    grid = configs(c, SPACE, "disaggregated")
    pick = np.flatnonzero(np.isin(grid["max_batch"], (16, 64)))[:30]
    sub = {k: v[pick] for k, v in grid.items()}
    g = goodput(c, SPACE, W, LengthStats.of(W), "disaggregated", sub)
    rates = np.linspace(0.01, 1.2 * g.max(), 3000)
    direct = np.zeros(pick.size)
    for r in rates:
        ok = feasible_at(c, "disaggregated", sub, np.full(pick.size, r))
        direct = np.where(ok, r, direct)
    assert g == pytest.approx(direct, rel=2e-3, abs=rates[1] - rates[0])


def test_replicas_scale_goodput_exactly() -> None:
    c = next(iter(run_sweep(SPACE, W).curves.values()))
    grid = {"prefill_replicas": np.zeros(3), "decode_replicas": np.array([1.0, 2.0, 5.0]),
            "max_batch": np.full(3, 64.0)}  # fmt: skip
    g = goodput(c, SPACE, W, LengthStats.of(W), "chunked", grid)
    assert g[0] > 0 and g == pytest.approx(g[0] * grid["decode_replicas"])


def test_goodput_per_dollar_objective() -> None:
    space = SweepSpace(model="llama-3-8b", gpus=("h100-sxm", "l40s"), tp=(1, 2),
                       weight_dtypes=("bf16", "fp8"), kv_dtypes=("bf16",), max_gpus=8)  # fmt: skip
    cheap = plan(space, W, simulate_requests=0, explain=False).recommended
    best = plan(space.model_copy(update={"objective": "goodput-per-dollar"}), W,
                simulate_requests=0, explain=False)  # fmt: skip
    rec = best.recommended
    assert cheap is not None and rec is not None and rec["feasible"]
    assert rec["goodput_requests_per_usd"] >= cheap["goodput_requests_per_usd"] * (1 - 1e-6)
    assert rec["goodput_requests_per_s"] >= W.rate_per_s  # it serves the offered load
    # no feasible configuration of the grid does better: each group and scheduler kept its
    # best (evaluated on the whole grid), and the recommendation is the best of those
    rows = best.sweep.feasible
    assert rec["goodput_requests_per_usd"] >= rows["goodput_requests_per_usd"].max() * (1 - 1e-6)
    ratio = rec["goodput_requests_per_usd"] / (rec["goodput_requests_per_s"] * 3600)
    assert ratio == pytest.approx(1 / rec["cost_per_hour"])


def test_plan_reports_goodput_on_every_shown_row() -> None:
    p = plan(SPACE, W, simulate_requests=200)
    assert p.recommended is not None
    for row in (p.recommended, *p.pareto):
        assert row["goodput_requests_per_s"] >= W.rate_per_s * (1 - 1e-9)  # feasible rows
    assert any(line.startswith("Goodput:") for line in p.explanation)
    sim = p.simulations[0]
    assert 0 <= sim["goodput_requests_per_s"] <= W.rate_per_s


def test_simulated_slo_attainment() -> None:
    # a lone prefill of S per request at a low rate: every TTFT is S, so a TTFT target just
    # above S admits every request and one just below admits none
    n, S = 200, 0.1
    arr = np.arange(n) * 1.0
    ones = np.ones(n)
    above = simulate(Linear(const=S), "colocated", arr, ones, ones, 8, slo_s=(S * 1.01, None))
    below = simulate(Linear(const=S), "colocated", arr, ones, ones, 8, slo_s=(S * 0.99, None))
    assert (above.slo_attainment, below.slo_attainment) == (1.0, 0.0)


def test_tighter_slo_never_raises_goodput() -> None:
    c = next(iter(run_sweep(SPACE, W).curves.values()))
    grid = configs(c, SPACE, "chunked")
    values = []
    for tpot in (0.1, 0.05, 0.03, 0.02):
        w = W.model_copy(update={"slo": SLO(ttft_p99_s=0.5, tpot_p99_s=tpot)})
        values.append(goodput(c, SPACE, w, LengthStats.of(w), "chunked", grid))
    for looser, tighter in itertools.pairwise(values):
        assert np.all(tighter <= looser * (1 + 1e-4))
    assert values[-1].sum() < values[0].sum()
