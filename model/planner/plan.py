"""The capacity plan: sweep, recommend the cheapest feasible configuration, trace the Pareto
frontier (tokens/s per GPU against tokens/s per user), check both by simulation, explain.

`recheck(plan_row)` replays a recommended configuration through the ordinary prediction path
(`model.api.run`, what `rooflens predict` runs), as the tests do.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from hardware.errors import RooflensError
from model.planner.check import MAX_SIMULATIONS, RANK, check_by_simulation, verify
from model.planner.explain import describe, explain_infeasible, explain_recommendation
from model.planner.pareto import pareto_mask
from model.planner.request import check_simulation
from model.planner.sweep import SweepResult, SweepSpace, group_of, records, run_sweep
from model.planner.workload import ServingWorkload


@dataclass
class Plan:
    space: SweepSpace
    workload: ServingWorkload
    sweep: SweepResult
    recommended: dict[str, Any] | None
    pareto: list[dict[str, Any]]
    explanation: list[str]
    alternatives: list[dict[str, Any]] = field(default_factory=list)
    simulations: list[dict[str, Any]] = field(default_factory=list)
    elapsed_s: float = 0.0
    verified: bool | None = None  # the recommendation passed the simulation (None: not run)

    def to_dict(self) -> dict[str, Any]:
        w = self.workload
        return {
            "model": self.space.model,
            "workload": {
                "rate_per_s": w.rate_per_s,
                "prompt": w.prompt.label(),
                "output": w.output.label(),
                "prompt_mean_tokens": w.prompt.mean(),
                "output_mean_tokens": w.output.mean(),
                "slo": w.slo.model_dump(),
            },
            "space": self.space.model_dump(),
            "recommended": self.recommended,
            "recommended_verified_by_simulation": self.verified,
            "pareto": self.pareto,
            "n_configs_evaluated": self.sweep.n_configs,
            "elapsed_s": self.elapsed_s,
            "sweep_s": self.sweep.elapsed_s,
            "rejected": self.sweep.rejected,
            "explanation": self.explanation,
            "alternatives": self.alternatives,
            "simulations": self.simulations,
            "notes": self.sweep.notes,
        }


def cheapest(rows: pd.DataFrame) -> dict[str, Any] | None:
    if rows.empty:
        return None
    return records(rows.sort_values(RANK))[0]


def frontier(rows: pd.DataFrame) -> pd.DataFrame:
    if rows.empty:
        return rows
    mask = pareto_mask(
        rows["tokens_per_s_per_gpu"].to_numpy(), rows["tokens_per_s_per_user"].to_numpy()
    )
    return rows[mask].sort_values("tokens_per_s_per_gpu", ascending=False)


def plan(
    space: SweepSpace,
    workload: ServingWorkload,
    *,
    simulate_requests: int = 2000,
    seed: int = 0,
    max_simulated_pareto: int = 4,
    max_simulations: int = MAX_SIMULATIONS,
    progress: Callable[[int, int], None] | None = None,
    explain: bool = True,
) -> Plan:
    """Sweep, recommend, simulate and explain. simulate_requests=0 skips the simulation."""
    check_simulation(simulate_requests, seed)  # before the sweep: memory and seed (request.py)
    start = time.perf_counter()
    sweep = run_sweep(space, workload, progress)
    if not sweep.n_configs and sweep.skipped:  # every group refused: a slip in the sweep space
        reasons = "; ".join(f"{why} ({n}×)" for why, n in sweep.skipped.items())
        raise RooflensError(f"no configuration of the sweep could be priced: {reasons}")
    feasible = sweep.feasible
    rec = cheapest(feasible)
    front = frontier(feasible)
    pareto = records(front)
    alternatives: list[dict[str, Any]] = []
    sims: list[dict[str, Any]] = []
    checks: list[str] = []
    verified_flag: bool | None = None
    if simulate_requests and rec is not None:
        verified, tried = verify(sweep, space, workload, simulate_requests, seed, max_simulations)
        sims.extend(tried)
        if verified is not None and len(tried) > 1:
            checks.append(
                f"Simulation check: the analytical cheapest ({describe(rec)}) misses "
                + ", ".join(tried[0]["sim_misses_slo"])
                + " when simulated; recommended instead: the cheapest configuration that also "
                "passes the simulation."
            )
            rec = verified
        elif verified is None:
            checks.append(
                f"Simulation warning: none of the {len(tried)} cheapest configurations passes "
                "every SLO when simulated; the analytical steady state is optimistic here, and "
                "the recommendation shown is the analytical cheapest, not verified."
            )
        verified_flag = verified is not None
        stride = max(1, len(pareto) // max(max_simulated_pareto, 1))
        picks = [("pareto", p) for p in pareto[::stride]]
        sims += check_by_simulation(picks[:max_simulated_pareto], sweep, space, workload,
                                    simulate_requests, seed)  # fmt: skip
    lines: list[str] = []
    if explain and rec is not None:
        lines = explain_recommendation(rec, sweep.curves[group_of(rec)], space, workload)
    elif explain:
        lines, alternatives = explain_infeasible(space, workload, sweep, run_sweep)
    lines += checks
    return Plan(space, workload, sweep, rec, pareto, lines, alternatives, sims,
                time.perf_counter() - start, verified_flag)  # fmt: skip


def recheck(row: dict[str, Any], model: str, w: ServingWorkload, profile: str, chunk: int) -> Any:
    """(prediction at batch 1, prediction at the batch cap) from model.api.run."""
    from model.api import make_scenario, run

    common = dict(
        prompt_len=max(1, round(w.prompt.mean())),
        output_len=max(1, round(w.output.mean())),
        weight_dtype=row["weight_dtype"], act_dtype=row["act_dtype"], kv_dtype=row["kv_dtype"],
        tp=int(row["tp"]), pp=int(row["pp"]), ep=int(row["ep"]), profile=profile,
        prefill_chunk_tokens=chunk,
    )  # fmt: skip
    opts = list(group_of(row).opts)
    single = run(make_scenario(model, row["gpu"], batch=1, **common), opts)  # type: ignore[arg-type]
    per_stage = int(np.ceil(row["batch"] / int(row["pp"])))
    full = run(make_scenario(model, row["gpu"], batch=per_stage, **common), opts)  # type: ignore[arg-type]
    return single, full
