"""The nearest feasible relaxation of an infeasible request, from the first sweep's own rows:
which SLO(s) to loosen, to what value, and the cheapest configuration meeting the loosened
SLOs. No re-sweep: the sweep's curves (one per group) are re-evaluated at the new targets.

Among configurations that fit and keep up, the sweep keeps per group and scheduler the one with
the smallest worst metric/SLO ratio (grid.slo_ratio). The smallest of those, r*, is the least
uniform loosening that admits anything: every SLO scaled by r* admits that configuration, and
any scale below r* admits none (a configuration admitted would have a worst ratio below r*).
Only the SLOs that configuration misses are loosened, each to its own value there (≤ r× the
target), so the advice names the binding SLO(s) and leaves the others as asked. A configuration
meeting the loosened SLOs has a worst ratio ≤ r*, hence exactly r*: only the groups whose kept
row reaches r* are re-evaluated, each capped at the nearest miss's cost.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from rooflens.io.units import fmt_time
from rooflens.model.planner.check import RANK
from rooflens.model.planner.grid import evaluate_group
from rooflens.model.planner.serving import LengthStats
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.sweep import SweepResult, first_record, group_of, records
from rooflens.model.planner.workload import ServingWorkload

# (row key, SLO field, label): the metric a plan row reports for each SLO target
SLO_METRICS = (
    ("ttft_p99_s", "ttft_p99_s", "TTFT p99"),
    ("tpot_p99_s", "tpot_p99_s", "TPOT p99"),
    ("ttft_s", "ttft_mean_s", "TTFT mean"),
    ("tpot_s", "tpot_mean_s", "TPOT mean"),
)


def nearest_miss(sweep: SweepResult) -> dict[str, Any] | None:
    """The stable configuration closest to the SLOs (smallest worst ratio, then cost)."""
    rows = sweep.rows
    if rows.empty or "slo_ratio" not in rows:
        return None
    stable = rows[rows["reason"].isin(("misses_ttft", "misses_tpot"))]
    if stable.empty:
        return None
    return first_record(stable.sort_values(["slo_ratio", *RANK]))


def nearest_relaxation(
    sweep: SweepResult, space: SweepSpace, w: ServingWorkload
) -> dict[str, Any] | None:
    """{'loosen': [{slo, label, from_s, to_s, factor}], 'slo': loosened SLO, 'ratio': r*,
    'nearest': that configuration, 'cheapest': the cheapest one meeting the loosened SLOs}, or
    None when no configuration fits and keeps up (then no SLO is what binds)."""
    miss = nearest_miss(sweep)
    if miss is None:
        return None
    loosen = []
    for key, field, label in SLO_METRICS:
        target = getattr(w.slo, field)
        if target is not None and miss[key] > target:
            loosen.append({"slo": field, "label": label, "from_s": target, "to_s": miss[key],
                           "factor": miss[key] / target})  # fmt: skip
    slo = w.slo.model_copy(update={x["slo"]: x["to_s"] for x in loosen})
    relaxed = w.model_copy(update={"slo": slo})
    cost_space = space.model_copy(update={"objective": "cost"})  # no goodput search here
    L = LengthStats.of(relaxed)
    kept: list[dict[str, Any]] = []
    budget = miss["cost_per_hour"] * (1 + 1e-9)  # that configuration already meets them
    tied = sweep.rows[sweep.rows["slo_ratio"] <= miss["slo_ratio"] * (1 + 1e-9)]
    for group in dict.fromkeys(group_of(r) for r in records(tied)):
        c = sweep.curves[group]  # only groups whose smallest worst ratio is r* can qualify
        n_max = min(space.max_gpus, int(budget / c.usd_per_gpu_hour))  # nothing dearer can win
        capped = cost_space.model_copy(update={"max_gpus": n_max})
        kept += evaluate_group(c, capped, relaxed, L)[2]
    miss_row = {**miss, "feasible": True}  # meets the loosened SLOs (a mixed pair, maybe)
    frame = pd.DataFrame([miss_row, *(r for r in kept if r["feasible"])])
    cheapest = first_record(frame.sort_values(RANK, kind="stable"))
    return {"loosen": loosen, "slo": slo.model_dump(), "ratio": miss["slo_ratio"],
            "nearest": miss, "cheapest": cheapest}  # fmt: skip


def relaxation_line(relax: dict[str, Any], describe: Any) -> str:
    """'Nearest feasible relaxation: loosen TPOT p99 from 5 ms to 8.69 ms (1.74×); …'."""
    what = " and ".join(
        f"{x['label']} from {fmt_time(x['from_s'])} to {fmt_time(x['to_s'])} ({x['factor']:.3g}×)"
        for x in relax["loosen"]
    )
    best = relax["cheapest"]
    return (
        f"Nearest feasible relaxation: loosen {what}; the cheapest plan then is "
        f"{describe(best)}: ${best['cost_per_hour']:.2f}/h, "
        f"${best['cost_per_million_tokens']:.3f} per million output tokens."
    )
