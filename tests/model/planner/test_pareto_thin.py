"""Thinning the Pareto frontier (issue 26 §5): only configurations that differ meaningfully are
listed, and the plan says how many it left out."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from rooflens.model.planner.pareto import MIN_USER_GAIN, pareto_mask, thin_mask, thinning_rule
from rooflens.model.planner.plan import frontier, thinned


def test_points_under_the_gain_are_dropped() -> None:
    # a frontier: per GPU falling, per user rising; 101 and 101.5 are within 2 % of 100
    x = np.array([1000.0, 900.0, 800.0, 700.0, 600.0])
    y = np.array([100.0, 101.0, 101.5, 110.0, 111.0])
    assert pareto_mask(x, y).all()
    keep = thin_mask(x, y, 0.02)
    assert keep.tolist() == [True, False, False, True, False]
    # the rule by hand: each kept y is ≥ 1.02 × the one kept before it
    kept = y[keep]
    assert all(b >= 1.02 * a for a, b in itertools.pairwise(kept))
    assert thin_mask(x, y, 0.0).all()  # no threshold: the whole frontier


def test_a_plan_front_is_thinned_and_counts_what_it_hid() -> None:
    rng = np.random.default_rng(3)
    rows = pd.DataFrame({"tokens_per_s_per_gpu": rng.uniform(100, 1000, 400)})
    rows["tokens_per_s_per_user"] = 5e4 / rows["tokens_per_s_per_gpu"] + rng.uniform(0, 1, 400)
    front = frontier(rows)
    shown = thinned(front)
    assert 1 < len(shown) < len(front)
    users = shown["tokens_per_s_per_user"].to_numpy()
    assert (users[1:] >= users[:-1] * (1 + MIN_USER_GAIN)).all()
    # every hidden point lies within the gain of the listed point before it
    for _, r in front.drop(shown.index).iterrows():
        before = shown[shown["tokens_per_s_per_gpu"] >= r["tokens_per_s_per_gpu"]]
        assert r["tokens_per_s_per_user"] < before["tokens_per_s_per_user"].max() * (
            1 + MIN_USER_GAIN
        )
    hidden = len(front) - len(shown)
    assert f"{hidden:,} frontier configurations" in thinning_rule(hidden)
    assert "at least 2 % faster per user" in thinning_rule(hidden)


def test_a_configuration_simulated_once_is_listed_once() -> None:
    # the recommendation is often the frontier's first point: its check is not run twice
    from rooflens.model.planner.check import roles, sim_config, unsimulated

    row = {"gpu": "h100-sxm", "n_gpus": 8, "tp": 8, "pp": 1, "ep": 1, "mode": "chunked",
           "batch": 64, "weight_dtype": "fp8", "kv_dtype": "fp8", "opts": ""}  # fmt: skip
    other = {**row, "kv_dtype": "bf16"}  # differs in its KV dtype only: a configuration of its own
    sims = [{"role": "recommended", "config": sim_config(row)}]
    assert unsimulated([("pareto", row), ("pareto", other)], sims) == [("pareto", other)]
    assert roles(sims[0]) == "recommended, pareto"
