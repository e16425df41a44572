"""The simulation check: replay configurations through the discrete-event simulation (sim.py)
and pick the recommendation as the cheapest configuration that passes both checks.

`verify` scans every analytically feasible configuration of the sweep in cost order (RANK:
cost per hour, GPUs, p99 TPOT, p99 TTFT), lazily: each (group, scheduler) is re-evaluated on
its whole grid (serving.py, one vectorised pass) only when the scan reaches its cheapest
configuration, and a heap merges the groups. The first configuration whose simulation also
meets every SLO is the recommendation, so the result is the exact minimum over the grid of
"fits, meets the SLOs analytically and in simulation" — up to `budget` simulations. Hence, by
construction: a tighter SLO never gives a cheaper recommendation (the simulation of each
configuration does not depend on the SLO, and the set that passes only shrinks), and more load
never does either as long as each configuration's analytical metrics (tests/model/planner) and its
seeded simulation (arrival times scale with 1/rate over the same draws) do not improve with load.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any

import numpy as np

from rooflens.io.units import fmt_time
from rooflens.model.planner.curves import Curves
from rooflens.model.planner.grid import classify, configs, evaluate, record, slo_ratio
from rooflens.model.planner.mixed import PairCosts, prefill_group, ranked_pair
from rooflens.model.planner.serving import LengthStats, kv_transfer
from rooflens.model.planner.sim import SimResult, simulate
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.step_costs import CurveCosts
from rooflens.model.planner.sweep import SweepResult, group_of, records
from rooflens.model.planner.trace import RequestTrace
from rooflens.model.planner.workload import ServingWorkload

RANK = ["cost_per_hour", "n_gpus", "tpot_p99_s", "ttft_p99_s"]
OPTIMISTIC = 1.10  # flag when the simulation's p99 exceeds the analytical one by 10 %
MAX_SIMULATIONS = 12  # configurations simulated before the scan gives up


def simulate_row(
    c: Curves, row: dict[str, Any], w: ServingWorkload, chunk_tokens: int,
    n_requests: int = 2000, seed: int = 0, prefill: Curves | None = None,
) -> SimResult:  # fmt: skip
    """Simulate one attention group of a configuration (random routing: each of the
    replicas × ep/tp groups sees that share of the rate)."""
    rng = np.random.default_rng(seed)
    max_ctx = int(c.prefill_grid_tokens.max())
    if w.trace is not None:
        return _simulate_trace(c, row, w.trace, chunk_tokens, n_requests, rng, max_ctx,
                               per_request_slo(w), prefill)  # fmt: skip
    prompts = w.prompt.sample(rng, n_requests, max_ctx - 1)
    outputs = np.minimum(w.output.sample(rng, n_requests, max_ctx - 1), max_ctx - prompts)
    groups = c.group.attention_groups  # EP: ep/tp attention groups per replica
    decode_rate = w.rate_per_s / (row["decode_replicas"] * groups)
    if row["mode"] == "disaggregated":
        prefill_gap_s = row["prefill_replicas"] * groups / w.rate_per_s
        arrivals = np.cumsum(rng.exponential(prefill_gap_s, n_requests))
        decode_arrivals = np.cumsum(rng.exponential(1.0 / decode_rate, n_requests))
    else:
        arrivals = np.cumsum(rng.exponential(1.0 / decode_rate, n_requests))
        decode_arrivals = None
    costs, xfer = _costs(c, prefill, prompts)
    return simulate(costs, row["mode"], arrivals, prompts, outputs, int(row["batch"]),
                    chunk_tokens, decode_arrivals, xfer, slo_s=per_request_slo(w))  # fmt: skip


def _costs(c: Curves, prefill: Curves | None, prompts: np.ndarray) -> tuple[CurveCosts, Any]:
    """The replica's step costs (a mixed pair's: prefill side and decode side) and each
    request's KV transfer time, s."""
    cp = c if prefill is None else prefill
    per_token, latency = kv_transfer(cp, c)
    xfer = np.interp(prompts, cp.prefill_grid_tokens, cp.prefill_grid_target_tokens) * per_token
    return (CurveCosts(c) if prefill is None else PairCosts(prefill, c)), xfer + latency


def per_request_slo(w: ServingWorkload) -> tuple[float | None, float | None]:
    """The p99 targets, applied to each request (goodput counts the requests within them)."""
    return w.slo.ttft_p99_s, w.slo.tpot_p99_s


def _simulate_trace(
    c: Curves, row: dict[str, Any], t: RequestTrace, chunk_tokens: int, n_requests: int,
    rng: np.random.Generator, max_ctx: int, slo: tuple[float | None, float | None],
    prefill: Curves | None = None,
) -> SimResult:  # fmt: skip
    """The trace's own arrivals and lengths, routed at random: one attention group sees a
    1/(replicas × groups) share (disaggregated: the prefill replica one share, the decode
    replica another, paired in time order)."""
    groups = c.group.attention_groups
    times = np.asarray(t.timestamp_s)
    mine = t.routed(1.0 / (row["decode_replicas"] * groups), rng, n_requests)
    decode_arrivals = None
    if row["mode"] == "disaggregated":
        pre = t.routed(1.0 / (row["prefill_replicas"] * groups), rng, n_requests)
        size = min(pre.size, mine.size)
        decode_arrivals, mine = times[mine[:size]], pre[:size]
    prompts = np.clip(np.asarray(t.input_len, dtype=float)[mine], 1, max_ctx - 1)
    outputs = np.clip(np.asarray(t.output_len, dtype=float)[mine], 1, max_ctx - prompts)
    costs, xfer = _costs(c, prefill, prompts)
    if decode_arrivals is not None:  # a request decodes once its prefill replica is done
        decode_arrivals = np.maximum(decode_arrivals, times[mine])
    return simulate(costs, row["mode"], times[mine], prompts, outputs, int(row["batch"]),
                    chunk_tokens, decode_arrivals, xfer, slo_s=slo)  # fmt: skip


CONFIG_KEYS = ("gpu", "engine", "n_gpus", "tp", "pp", "ep", "mode", "batch", "weight_dtype",
               "act_dtype", "kv_dtype", "opts")  # fmt: skip


def sim_config(row: dict[str, Any]) -> dict[str, Any]:
    """What names a simulated configuration (a plan row's layout, scheduler, cap and dtypes)."""
    return {**{k: row.get(k) for k in CONFIG_KEYS}, "prefill_gpu": row.get("prefill_gpu") or ""}


def unsimulated(
    picks: list[tuple[str, dict[str, Any]]], sims: list[dict[str, Any]]
) -> list[tuple[str, dict[str, Any]]]:
    """The picks not simulated yet; a pick already in `sims` (the recommendation is often the
    frontier's first point) adds its role to that simulation's `also` list instead of being
    simulated and listed twice (`roles` says both)."""
    out = []
    for role, row in picks:
        same = [s for s in sims if s["config"] == sim_config(row)]
        for s in same:
            s["also"] = [*s.get("also", []), role]
        if not same:
            out.append((role, row))
    return out


def roles(sim: dict[str, Any]) -> str:
    """A simulation's roles, for a table: 'recommended, pareto'."""
    return ", ".join([sim["role"], *sim.get("also", [])])


def check_by_simulation(
    rows: list[tuple[str, dict[str, Any]]], sweep: SweepResult, space: SweepSpace,
    w: ServingWorkload, n_requests: int, seed: int,
) -> list[dict[str, Any]]:  # fmt: skip
    out = []
    for role, row in rows:
        group = group_of(row)
        pg = prefill_group(row, group)
        sim = simulate_row(sweep.curves[group], row, w, space.chunk_tokens, n_requests, seed,
                           None if pg is None else sweep.curves[pg])  # fmt: skip
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
        config = sim_config(row)
        out.append({"role": role, "config": config, **sim.to_dict(), "optimistic": flags,
                    "sim_misses_slo": misses,
                    "goodput_requests_per_s": sim.slo_attainment * w.rate_per_s})  # fmt: skip
    return out


def ranked(c: Curves, space: SweepSpace, w: ServingWorkload, mode: str) -> Iterator[dict[str, Any]]:
    """Every analytically feasible configuration of one group and scheduler, in RANK order."""
    L = LengthStats.of(w)
    grid = configs(c, space, mode)
    if c.max_batch_memory < 1:
        return
    m, cap = evaluate(c, space, w, L, mode, grid)
    ok = np.flatnonzero(classify(m, cap, w) == 4)
    n_gpus = (grid["prefill_replicas"] + grid["decode_replicas"]) * c.group.gpus_per_replica
    cost = n_gpus * c.usd_per_gpu_hour
    keys = (m.ttft_p99_s[ok], m.tpot_p99_s[ok], n_gpus[ok], cost[ok])
    for j in ok[np.lexsort(keys)]:
        row = record(c, mode, grid, m, cap, int(j), 4, w, L)
        row["slo_ratio"] = float(slo_ratio(m.take(np.array([j])), w)[0])
        yield row


def verify(
    sweep: SweepResult, space: SweepSpace, w: ServingWorkload, n_requests: int, seed: int,
    budget: int = MAX_SIMULATIONS,
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:  # fmt: skip
    """The cheapest configuration (RANK order over the whole grid) that also meets every SLO
    when simulated, or None if the first `budget` simulated all miss; and the simulations."""
    heap: list[tuple[Any, ...]] = []
    streams: list[Iterator[dict[str, Any]]] = []

    def push(k: int) -> None:
        row = next(streams[k], None)
        if row is not None:
            heapq.heappush(heap, (*(row[key] for key in RANK), k, row))

    feasible = sweep.feasible
    units = dict.fromkeys((r["mode"], group_of(r), prefill_group(r, group_of(r)))
                          for r in records(feasible))  # fmt: skip
    for mode, group, pg in units:
        c = sweep.curves[group]
        streams.append(ranked(c, space, w, mode) if pg is None
                       else ranked_pair(sweep.curves[pg], c, space, w))  # fmt: skip
        push(len(streams) - 1)
    done: list[dict[str, Any]] = []
    while heap and len(done) < budget:
        *_, k, row = heapq.heappop(heap)
        done += check_by_simulation([("recommended", row)], sweep, space, w, n_requests, seed)
        if not done[-1]["sim_misses_slo"]:
            return row, done
        done[-1]["role"] = "rejected by simulation"
        push(k)
    return None, done
