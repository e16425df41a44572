"""The capacity plan: sweep, recommend the cheapest feasible configuration, trace the Pareto
frontier (tokens/s per GPU against tokens/s per user), check both by simulation, explain.

`recheck(plan_row)` replays a recommended configuration through the ordinary prediction path
(`model.predict.api.run`, what `rooflens predict` runs), as the tests do.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import get_gpu
from rooflens.model.analysis.energy import energy
from rooflens.model.planner.check import (
    MAX_SIMULATIONS,
    RANK,
    check_by_simulation,
    unsimulated,
    verify,
)
from rooflens.model.planner.curves import Group
from rooflens.model.planner.explain import describe, explain_infeasible, explain_recommendation
from rooflens.model.planner.grid import goodput, goodput_of, per_dollar_key
from rooflens.model.planner.mixed import evaluate_pair, prefill_group
from rooflens.model.planner.pareto import pareto_mask, thin_mask
from rooflens.model.planner.plan_args import check_simulation
from rooflens.model.planner.serving import LengthStats
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.sweep import SweepResult, first_record, group_of, records, run_sweep
from rooflens.model.planner.workload import ServingWorkload


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
    relaxation: dict[str, Any] | None = None  # infeasible: the nearest SLO loosening (relax.py)
    pareto_hidden: int = 0  # frontier points thinned out (pareto.thinning_rule)

    def to_frame(self) -> pd.DataFrame:
        """Every kept configuration: per group and scheduler, the cheapest feasible, the Pareto
        points and the nearest miss, with its verdict."""
        return self.sweep.rows

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
                "trace": None
                if w.trace is None
                else {"path": w.trace.path, "requests": w.trace.n, "span_s": w.trace.span_s},
            },
            "space": self.space.model_dump(),
            "recommended": self.recommended,
            "recommended_verified_by_simulation": self.verified,
            "pareto": self.pareto,
            "pareto_hidden": self.pareto_hidden,
            "n_configs_evaluated": self.sweep.n_configs,
            "n_groups_priced": self.sweep.groups,
            "elapsed_s": self.elapsed_s,
            "sweep_s": self.sweep.elapsed_s,
            "rejected": self.sweep.rejected,
            "explanation": self.explanation,
            "alternatives": self.alternatives,
            "relaxation": self.relaxation,
            "simulations": self.simulations,
            "notes": self.sweep.notes,
        }


def cheapest(rows: pd.DataFrame) -> dict[str, Any] | None:
    if rows.empty:
        return None
    return first_record(rows.sort_values(RANK))


def best_goodput_per_dollar(rows: pd.DataFrame) -> dict[str, Any] | None:
    """The feasible row with the most goodput per dollar; ties go to the cheapest."""
    if rows.empty:
        return None
    key = -per_dollar_key(rows["goodput_requests_per_usd"].to_numpy())
    ranked = rows.assign(_neg=key).sort_values(["_neg", *RANK])
    return first_record(ranked.drop(columns="_neg"))


def attach_goodput(rows: list[dict[str, Any]], sweep: SweepResult, space: SweepSpace,
                   w: ServingWorkload) -> None:  # fmt: skip
    """Goodput (requests/s within every SLO) and goodput per dollar on these rows, one
    vectorised search per group and scheduler (grid.goodput)."""
    todo = [r for r in rows if "goodput_requests_per_s" not in r]
    L = LengthStats.of(w)

    def unit(r: dict[str, Any]) -> tuple[str, Group, Group | None]:
        return r["mode"], group_of(r), prefill_group(r, group_of(r))

    for key in dict.fromkeys(unit(r) for r in todo):
        mine = [r for r in todo if unit(r) == key]
        grid = {k: np.array([float(r[k]) for r in mine])
                for k in ("prefill_replicas", "decode_replicas", "max_batch")}  # fmt: skip
        mode, group, pg = key
        c = sweep.curves[group]
        if pg is None:
            g = goodput(c, space, w, L, mode, grid)
        else:
            g = goodput_of(partial(evaluate_pair, sweep.curves[pg], c, L), w, mode, grid)
        for r, value in zip(mine, g, strict=True):
            r["goodput_requests_per_s"] = float(value)
            r["goodput_requests_per_usd"] = float(value) * 3600.0 / r["cost_per_hour"]


def frontier(rows: pd.DataFrame) -> pd.DataFrame:
    if rows.empty:
        return rows
    mask = pareto_mask(
        rows["tokens_per_s_per_gpu"].to_numpy(), rows["tokens_per_s_per_user"].to_numpy()
    )
    return rows[mask].sort_values("tokens_per_s_per_gpu", ascending=False)


def thinned(front: pd.DataFrame) -> pd.DataFrame:
    """The frontier less the points that differ from a listed one by under MIN_USER_GAIN per
    user (pareto.thin_mask; the rule in words: pareto.thinning_rule)."""
    if front.empty:
        return front
    keep = thin_mask(front["tokens_per_s_per_gpu"].to_numpy(),
                     front["tokens_per_s_per_user"].to_numpy())  # fmt: skip
    return front[keep]


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
    alternatives: bool | None = None,
) -> Plan:
    """Sweep, recommend, simulate and explain. simulate_requests=0 skips the simulation;
    `alternatives` (infeasible only): re-plan with more GPUs, other types, a lower rate: None
    only when cheap (explain.explain_infeasible), True always, False never."""
    check_simulation(simulate_requests, seed)  # before the sweep: memory and seed (request.py)
    start = time.perf_counter()
    sweep = run_sweep(space, workload, progress)
    if not sweep.n_configs and sweep.skipped:  # every group refused: a slip in the sweep space
        reasons = "; ".join(f"{why} ({n}×)" for why, n in sweep.skipped.items())
        raise RooflensError(f"no configuration of the sweep could be priced: {reasons}")
    feasible = sweep.feasible
    by_goodput = space.objective == "goodput-per-dollar"
    rec = best_goodput_per_dollar(feasible) if by_goodput else cheapest(feasible)
    front = frontier(feasible)
    pareto = records(thinned(front))
    attach_goodput([r for r in (rec, *pareto) if r is not None], sweep, space, workload)
    alts: list[dict[str, Any]] = []
    relax: dict[str, Any] | None = None
    sims: list[dict[str, Any]] = []
    checks: list[str] = []
    verified_flag: bool | None = None
    if simulate_requests and rec is not None and by_goodput:  # one check, not a cost scan
        sims += check_by_simulation([("recommended", rec)], sweep, space, workload,
                                    simulate_requests, seed)  # fmt: skip
        verified_flag = not sims[0]["sim_misses_slo"]
        if not verified_flag:
            checks.append("Simulation warning: the configuration with the most goodput per "
                          "dollar misses " + ", ".join(sims[0]["sim_misses_slo"]) +
                          " when simulated.")  # fmt: skip
    elif simulate_requests and rec is not None:
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
        sims += check_by_simulation(unsimulated(picks[:max_simulated_pareto], sims), sweep,
                                    space, workload, simulate_requests, seed)  # fmt: skip
    if rec is not None:
        attach_goodput([rec], sweep, space, workload)
    lines: list[str] = []
    if explain and rec is not None:
        lines = explain_recommendation(rec, sweep.curves[group_of(rec)], space, workload)
    elif explain:
        lines, alts, relax = explain_infeasible(space, workload, sweep, run_sweep, alternatives)
    if rec is not None:
        lines.append(goodput_line(rec, workload))
    lines += checks
    if rec is not None and get_gpu(rec["gpu"]).tdp_watts is None:  # energy is a by-product:
        lines.append(f"Energy: not estimated; GPU spec '{rec['gpu']}' gives no tdp_watts.")
    elif rec is not None:  # energy per token of the recommendation (model/analysis/energy.py)
        rec = rec | _row_energy(rec, space.model, workload, space.profile, space.chunk_tokens)
        lines.append(
            f"Energy: {rec['joules_per_output_token']:.3g} J per output token "
            f"({rec['output_tokens_per_joule']:.3g} tokens/J), GPU boards busy at the planned "
            "batch; idle + utilisation-weighted power up to TDP."
        )
    return Plan(space, workload, sweep, rec, pareto, lines, alts, sims,
                time.perf_counter() - start, verified_flag, relax,
                len(front) - len(pareto))  # fmt: skip


def recheck(row: dict[str, Any], model: str, w: ServingWorkload, profile: str, chunk: int
            ) -> Any:  # fmt: skip
    """(prediction at batch 1, prediction at the batch cap) from model.predict.api.run, priced
    as the row's engine runs it. The cap is the replica's sequences in flight, which `predict`
    cuts into PP micro-batches itself (the planner's curves price a PP group the same way,
    model/predict/pp_schedule.py)."""
    from rooflens.model.predict.api import make_scenario, run

    common = dict(
        prompt_len=max(1, round(w.prompt.mean())),
        output_len=max(1, round(w.output.mean())),
        weight_dtype=row["weight_dtype"], act_dtype=row["act_dtype"], kv_dtype=row["kv_dtype"],
        tp=int(row["tp"]), pp=int(row["pp"]), ep=int(row["ep"]), profile=profile,
        engine=group_of(row).engine, prefill_chunk=chunk, opts=tuple(group_of(row).opts),
    )  # fmt: skip
    opts = list(group_of(row).opts)
    single = run(make_scenario(model, row["gpu"], batch=1, **common), opts)
    full = run(make_scenario(model, row["gpu"], batch=int(row["batch"]), **common), opts)
    return single, full


def goodput_line(rec: dict[str, Any], w: ServingWorkload) -> str:
    g = rec["goodput_requests_per_s"]
    return (f"Goodput: {g:,.3g} requests/s within every SLO ({g / w.rate_per_s:.2f}× the "
            f"offered {w.rate_per_s:.3g} requests/s), {rec['goodput_requests_per_usd']:,.0f} "
            "requests per dollar at that rate.")  # fmt: skip


def _row_energy(
    row: dict[str, Any],
    model: str,
    w: ServingWorkload,
    profile: str,
    chunk: int,
) -> dict[str, float]:
    """Energy of a plan row: its GPUs busy at the planned batch (continuous batching keeps every
    replica stepping), priced by replaying the row through the ordinary prediction path
    (`recheck`) and model/analysis/energy.py's power model."""
    _, full = recheck(row, model, w, profile, chunk)
    e = energy(full)
    return {
        "joules_per_output_token": e.joules_per_output_token,
        "output_tokens_per_joule": e.output_tokens_per_joule,
    }
