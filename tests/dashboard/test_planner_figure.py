"""The planner's Pareto chart draws a thinned cloud (dashboard/figures/planner.py `thin`): at most
one configuration per GPU and grid cell, the cheapest, drawn from the sweep's own rows; the
frontier and the recommendation exactly."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooflens.dashboard.figures.planner import CELLS_X, CELLS_Y, pareto_figure, thin


def _feasible(n: int = 5000, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    gpus = rng.choice(["h100-sxm", "a100-sxm-80gb", "l40s"], n)
    return pd.DataFrame(
        {
            "gpu": gpus,
            # fp8 weights run W8A8 where the GPU has fp8 units (the sweep's act_dtype rule)
            "act_dtype": np.where(gpus == "a100-sxm-80gb", "bf16", "fp8"),
            "n_gpus": rng.integers(1, 9, n),
            "tp": rng.choice([1, 2, 4, 8], n),
            "weight_dtype": "fp8",
            "kv_dtype": "fp8",
            "mode": "continuous",
            "batch": rng.integers(1, 256, n),
            "tokens_per_s_per_user": 10 ** rng.uniform(0.5, 2.5, n),
            "tokens_per_s_per_gpu": 10 ** rng.uniform(1, 4, n),
            "ttft_p99_s": rng.uniform(0.05, 2, n),
            "tpot_p99_s": rng.uniform(0.005, 0.05, n),
            "cost_per_hour": rng.uniform(2, 100, n),
            "cost_per_million_tokens": rng.uniform(0.1, 10, n),
        }
    )


def test_thin_keeps_the_cheapest_configuration_per_gpu_and_cell() -> None:
    feasible = _feasible()
    kept = thin(feasible)
    assert set(kept.index) <= set(feasible.index)  # real rows, unchanged
    pd.testing.assert_frame_equal(kept, feasible.loc[kept.index])
    assert set(kept["gpu"]) == set(feasible["gpu"])  # no GPU disappears
    assert len(kept) < len(feasible)
    assert kept.groupby("gpu").size().max() <= CELLS_X * CELLS_Y
    # a second route: the cell of each row by a plain loop, the cheapest row of each cell
    cells: dict[tuple[str, int, int], tuple[float, int]] = {}
    lx = np.log10(feasible["tokens_per_s_per_user"])
    ly = np.log10(feasible["tokens_per_s_per_gpu"])
    for i, row in feasible.iterrows():
        cx = min(int((lx[i] - lx.min()) / (lx.max() - lx.min()) * CELLS_X), CELLS_X - 1)
        cy = min(int((ly[i] - ly.min()) / (ly.max() - ly.min()) * CELLS_Y), CELLS_Y - 1)
        key = (row["gpu"], cx, cy)
        cost = row["cost_per_million_tokens"]
        if key not in cells or cost < cells[key][0]:
            cells[key] = (cost, i)
    assert sorted(kept.index) == sorted(i for _, i in cells.values())


def test_the_figure_draws_the_frontier_and_recommendation_exactly() -> None:
    feasible = _feasible(800)
    front = feasible.nlargest(5, "tokens_per_s_per_gpu")
    rec = feasible.loc[feasible["cost_per_million_tokens"].idxmin()].to_dict()
    fig = pareto_figure(feasible, front, rec)
    by_name = {t.name: t for t in fig.data}
    line = by_name["Pareto frontier"]
    assert sorted(line.x) == sorted(front["tokens_per_s_per_user"])
    assert list(by_name["recommended (cheapest)"].y) == [rec["tokens_per_s_per_gpu"]]
    cloud = sum(len(t.x) for t in fig.data if t.name.endswith("(feasible)"))
    assert cloud == len(thin(feasible))
    assert thin(feasible.iloc[:0]).empty
