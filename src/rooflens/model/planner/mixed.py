"""Mixed-GPU disaggregation (`plan --prefill-gpus A --decode-gpus B`): prefill replicas on one
GPU type, decode replicas on another (Splitwise, Patel et al. ISCA'24: compute-rich GPUs for
the compute-bound prompt phase, cheaper or memory-rich ones for the bandwidth-bound token
phase; DistServe, Zhong et al. OSDI'24).

A pair joins a priced prefill group and a priced decode group of the same model, weight and KV
precision, optimizations and serving engine (the KV cache moves between them as it is, and one
engine's deployment runs both sides) on different GPU types;
TP may differ (each side reshards its shard; serving.kv_transfer prices the slower side's
link). The grid is prefill replicas × decode replicas × batch caps within max_gpus, evaluated
by serving.disaggregated with both curves, classified and kept like a group's
(grid.evaluate_group): the cheapest feasible, its Pareto points, the nearest miss. Rows are
`disaggregated` rows whose `gpu`/`tp` are the decode side's, with `prefill_gpu`/`prefill_tp`.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import numpy as np

from rooflens.model.planner.curves import Curves, Group
from rooflens.model.planner.gpu_prices import usd_per_million_tokens
from rooflens.model.planner.grid import (
    REASONS,
    classify,
    goodput_of,
    per_dollar_key,
    record,
    slo_ratio,
)
from rooflens.model.planner.pareto import pareto_mask
from rooflens.model.planner.serving import LengthStats, Metrics, disaggregated
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.step_costs import CurveCosts
from rooflens.model.planner.workload import ServingWorkload

MODE = "disaggregated"


def pairs(space: SweepSpace, curves: dict[Group, Curves]) -> list[tuple[Curves, Curves]]:
    """(prefill, decode) curves of every allowed pair of different GPU types."""
    out = []
    for gp, cp in curves.items():
        for gd, cd in curves.items():
            if (gp.gpu in space.prefill_gpus and gd.gpu in space.decode_gpus
                    and gp.gpu != gd.gpu and gp.pp == gd.pp == 1 and gp.ep == gd.ep == 1
                    and (gp.weight_dtype, gp.kv_dtype, gp.opts, gp.engine)
                    == (gd.weight_dtype, gd.kv_dtype, gd.opts, gd.engine)):  # fmt: skip
                out.append((cp, cd))
    return out


def pair_grid(cp: Curves, cd: Curves, space: SweepSpace) -> dict[str, np.ndarray]:
    gp, gd = cp.group.gpus_per_replica, cd.group.gpus_per_replica
    n_p = np.arange(1, space.max_gpus // gp + 1, dtype=np.float64)
    n_d = np.arange(1, space.max_gpus // gd + 1, dtype=np.float64)
    caps = np.asarray(space.max_batches, dtype=np.float64)
    a, b, m = (x.ravel() for x in np.meshgrid(n_p, n_d, caps, indexing="ij"))
    keep = a * gp + b * gd <= space.max_gpus
    return {"prefill_replicas": a[keep], "decode_replicas": b[keep], "max_batch": m[keep]}


def evaluate_pair(
    cp: Curves, cd: Curves, L: LengthStats, grid: dict[str, np.ndarray], rate: Any
) -> tuple[Metrics, np.ndarray]:  # fmt: skip
    cap = np.minimum(grid["max_batch"], cd.max_batch_memory)
    m = disaggregated(cd, L, rate / grid["prefill_replicas"], rate / grid["decode_replicas"],
                      np.maximum(cap, 1.0), prefill=cp)  # fmt: skip
    return m, cap


def gpus_and_cost(cp: Curves, cd: Curves, grid: dict[str, np.ndarray]) -> tuple[Any, Any]:
    n_p = grid["prefill_replicas"] * cp.group.gpus_per_replica
    n_d = grid["decode_replicas"] * cd.group.gpus_per_replica
    return n_p + n_d, n_p * cp.usd_per_gpu_hour + n_d * cd.usd_per_gpu_hour


def pair_record(cp: Curves, cd: Curves, grid: dict[str, np.ndarray], m: Metrics,
                cap: np.ndarray, j: int, verdict: int, w: ServingWorkload,
                L: LengthStats) -> dict[str, Any]:  # fmt: skip
    """grid.record of the decode side, with the pair's GPUs, cost and prefill side."""
    row = record(cd, MODE, grid, m, cap, j, verdict, w, L)
    n_gpus, cost = (float(x[j]) for x in gpus_and_cost(cp, cd, grid))
    tokens = row["output_tokens_per_s"]
    row.update(
        n_gpus=int(n_gpus), prefill_gpu=cp.group.gpu, prefill_tp=cp.group.tp,
        prefill_act_dtype=cp.group.act_dtype,
        usd_per_gpu_hour=cost / n_gpus, cost_per_hour=cost,
        tokens_per_s_per_gpu=tokens / n_gpus,
        cost_per_million_tokens=usd_per_million_tokens(cost, tokens),
        slo_ratio=float(slo_ratio(m.take(np.array([j])), w)[0]),
    )  # fmt: skip
    return row


def evaluate_pairs(
    space: SweepSpace, w: ServingWorkload, L: LengthStats, curves: dict[Group, Curves]
) -> tuple[int, dict[str, int], list[dict[str, Any]]]:
    counts = dict.fromkeys(REASONS, 0)
    rows: list[dict[str, Any]] = []
    n = 0
    for cp, cd in pairs(space, curves):
        grid = pair_grid(cp, cd, space)
        n += grid["max_batch"].size
        if cd.max_batch_memory < 1 or cp.max_batch_memory < 1:
            counts["does_not_fit"] += grid["max_batch"].size
            continue
        m, cap = evaluate_pair(cp, cd, L, grid, w.rate_per_s)
        verdict = classify(m, cap, w)
        for k, reason in enumerate(REASONS):
            counts[reason] += int(np.count_nonzero(verdict == k))
        n_gpus, cost = gpus_and_cost(cp, cd, grid)
        ok = np.flatnonzero(verdict == 4)
        per_usd = None
        if space.objective == "goodput-per-dollar":
            ev = partial(evaluate_pair, cp, cd, L)
            per_usd = goodput_of(ev, w, MODE, grid) * 3600.0 / cost
        pick: list[int] = []
        if ok.size:
            pick.append(int(ok[np.lexsort((m.ttft_p99_s[ok], m.tpot_p99_s[ok], cost[ok]))[0]]))
            front = pareto_mask(w.rate_per_s * L.output_mean / n_gpus[ok], 1 / m.tpot_mean_s[ok])
            pick.extend(int(j) for j in ok[front])
            if per_usd is not None:
                pick.append(int(ok[np.lexsort((cost[ok], -per_dollar_key(per_usd[ok])))[0]]))
        else:
            near = np.flatnonzero(verdict >= 2)
            if near.size:
                pick.append(int(near[np.lexsort((cost[near], slo_ratio(m, w)[near]))[0]]))
        for j in dict.fromkeys(pick):
            rows.append(pair_record(cp, cd, grid, m, cap, j, int(verdict[j]), w, L))
            if per_usd is not None:
                rows[-1]["goodput_requests_per_usd"] = float(per_usd[j])
                rows[-1]["goodput_requests_per_s"] = float(per_usd[j] * cost[j] / 3600.0)
    return n, counts, rows


def ranked_pair(cp: Curves, cd: Curves, space: SweepSpace, w: ServingWorkload
                ) -> Iterator[dict[str, Any]]:  # fmt: skip
    """Every analytically feasible configuration of a pair, cheapest first (check.RANK)."""
    L = LengthStats.of(w)
    grid = pair_grid(cp, cd, space)
    m, cap = evaluate_pair(cp, cd, L, grid, w.rate_per_s)
    ok = np.flatnonzero(classify(m, cap, w) == 4)
    n_gpus, cost = gpus_and_cost(cp, cd, grid)
    for j in ok[np.lexsort((m.ttft_p99_s[ok], m.tpot_p99_s[ok], n_gpus[ok], cost[ok]))]:
        yield pair_record(cp, cd, grid, m, cap, int(j), 4, w, L)


def prefill_group(row: dict[str, Any], decode: Group) -> Group | None:
    """The prefill side's group of a mixed row (None for a single-group row)."""
    gpu = row.get("prefill_gpu")
    if not isinstance(gpu, str) or not gpu or gpu == decode.gpu:
        return None
    return Group(gpu, int(row["prefill_tp"]), 1, 1, decode.weight_dtype,
                 str(row["prefill_act_dtype"]), decode.kv_dtype, decode.opts,
                 decode.engine)  # fmt: skip


class PairCosts(CurveCosts):
    """StepCosts of a mixed pair for the simulation: prefill from one group, decode from the
    other (sim.simulate's disaggregated path reads prefill_s for the prefill replica)."""

    def __init__(self, cp: Curves, cd: Curves):
        super().__init__(cd)
        self.prefill_side = CurveCosts(cp)

    def prefill_s(self, prompt_tokens: np.ndarray) -> np.ndarray:
        return self.prefill_side.prefill_s(prompt_tokens)

    def prefill_hold_s(self, prompt_tokens: np.ndarray) -> np.ndarray:
        return self.prefill_side.prefill_hold_s(prompt_tokens)
