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

from model.planner.curves import Curves, Group
from model.planner.explain import describe, explain_infeasible, explain_recommendation
from model.planner.pareto import pareto_mask
from model.planner.sim import CurveCosts, SimResult, simulate
from model.planner.sweep import SweepResult, SweepSpace, records, run_sweep
from model.planner.workload import ServingWorkload
from model.units import fmt_time

RANK = ["cost_per_hour", "n_gpus", "tpot_p99_s", "ttft_p99_s"]
OPTIMISTIC = 1.10  # flag when the simulation's p99 exceeds the analytical one by 10 %


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


def group_of(row: dict[str, Any]) -> Group:
    opts = tuple(o for o in str(row.get("opts") or "").split(",") if o)
    return Group(row["gpu"], int(row["tp"]), int(row["pp"]), int(row["ep"]), row["weight_dtype"],
                 row["act_dtype"], row["kv_dtype"], opts)  # fmt: skip


def simulate_row(
    c: Curves, row: dict[str, Any], w: ServingWorkload, chunk_tokens: int,
    n_requests: int = 2000, seed: int = 0,
) -> SimResult:  # fmt: skip
    """Simulate one replica of a configuration (random routing: rate / replicas each)."""
    rng = np.random.default_rng(seed)
    max_ctx = int(c.prefill_grid_tokens.max())
    prompts = w.prompt.sample(rng, n_requests, max_ctx - 1)
    outputs = np.minimum(w.output.sample(rng, n_requests, max_ctx - 1), max_ctx - prompts)
    decode_rate = w.rate_per_s / row["decode_replicas"]
    if row["mode"] == "disaggregated":
        arrivals = np.cumsum(rng.exponential(row["prefill_replicas"] / w.rate_per_s, n_requests))
        decode_arrivals = np.cumsum(rng.exponential(1.0 / decode_rate, n_requests))
    else:
        arrivals = np.cumsum(rng.exponential(1.0 / decode_rate, n_requests))
        decode_arrivals = None
    xfer = prompts * c.kv_transfer_s_per_token + c.kv_transfer_latency_s
    return simulate(CurveCosts(c), row["mode"], arrivals, prompts, outputs, int(row["batch"]),
                    chunk_tokens, decode_arrivals, xfer)  # fmt: skip


def check_by_simulation(
    rows: list[tuple[str, dict[str, Any]]], sweep: SweepResult, space: SweepSpace,
    w: ServingWorkload, n_requests: int, seed: int,
) -> list[dict[str, Any]]:  # fmt: skip
    out = []
    for role, row in rows:
        sim = simulate_row(
            sweep.curves[group_of(row)], row, w, space.chunk_tokens, n_requests, seed
        )
        flags = []
        for name, analytical, simulated in (
            ("TTFT p99", row["ttft_p99_s"], sim.ttft_p99_s),
            ("TPOT p99", row["tpot_p99_s"], sim.tpot_p99_s),
            ("TPOT mean", row["tpot_s"], sim.tpot_mean_s),
        ):
            if simulated > OPTIMISTIC * analytical:
                flags.append(f"{name}: simulated {fmt_time(simulated)} > {fmt_time(analytical)}")
        slo = w.slo
        misses = [
            name
            for name, value, target in (("TTFT p99", sim.ttft_p99_s, slo.ttft_p99_s),
                                        ("TPOT p99", sim.tpot_p99_s, slo.tpot_p99_s),
                                        ("TTFT mean", sim.ttft_mean_s, slo.ttft_mean_s),
                                        ("TPOT mean", sim.tpot_mean_s, slo.tpot_mean_s))
            if target is not None and value > target
        ]  # fmt: skip
        config = {k: row[k] for k in ("gpu", "n_gpus", "tp", "pp", "mode", "batch")}
        out.append({"role": role, "config": config, **sim.to_dict(), "optimistic": flags,
                    "sim_misses_slo": misses})  # fmt: skip
    return out


def verify(
    feasible: pd.DataFrame, sweep: SweepResult, space: SweepSpace, w: ServingWorkload,
    n_requests: int, seed: int, tries: int = 6,
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:  # fmt: skip
    """Simulate the cheapest feasible configurations in order; return the first that meets
    every SLO in the simulation too (None if none of `tries` does), and the simulations."""
    done: list[dict[str, Any]] = []
    for row in records(feasible.sort_values(RANK).head(tries)):
        done += check_by_simulation([("recommended", row)], sweep, space, w, n_requests, seed)
        if not done[-1]["sim_misses_slo"]:
            return row, done
        done[-1]["role"] = "rejected by simulation"
    return None, done


def plan(
    space: SweepSpace,
    workload: ServingWorkload,
    *,
    simulate_requests: int = 2000,
    seed: int = 0,
    max_simulated_pareto: int = 4,
    progress: Callable[[int, int], None] | None = None,
    explain: bool = True,
) -> Plan:
    """Sweep, recommend, simulate and explain. simulate_requests=0 skips the simulation."""
    start = time.perf_counter()
    sweep = run_sweep(space, workload, progress)
    feasible = sweep.feasible
    rec = cheapest(feasible)
    front = frontier(feasible)
    pareto = records(front)
    alternatives: list[dict[str, Any]] = []
    sims: list[dict[str, Any]] = []
    checks: list[str] = []
    if simulate_requests and rec is not None:
        verified, tried = verify(feasible, sweep, space, workload, simulate_requests, seed)
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
                "every SLO when simulated; the analytical steady state is optimistic here."
            )
        picks = [("pareto", p) for p in pareto[:: max(1, len(pareto) // max_simulated_pareto)]]
        sims += check_by_simulation(picks[:max_simulated_pareto], sweep, space, workload,
                                    simulate_requests, seed)  # fmt: skip
    lines: list[str] = []
    if explain and rec is not None:
        lines = explain_recommendation(rec, sweep.curves[group_of(rec)], space, workload)
    elif explain:
        lines, alternatives = explain_infeasible(space, workload, sweep, run_sweep)
    lines += checks
    return Plan(space, workload, sweep, rec, pareto, lines, alternatives, sims,
                time.perf_counter() - start)  # fmt: skip


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
    opts = [o for o in str(row.get("opts") or "").split(",") if o]
    single = run(make_scenario(model, row["gpu"], batch=1, **common), opts)  # type: ignore[arg-type]
    per_stage = int(np.ceil(row["batch"] / int(row["pp"])))
    full = run(make_scenario(model, row["gpu"], batch=per_stage, **common), opts)  # type: ignore[arg-type]
    return single, full
