"""One group's grid (replica counts × batch caps, per scheduler) evaluated in one vectorised
pass of the serving model (serving.py), classified and reduced to the rows the plan keeps.

Each configuration is classified in this order: does not fit in memory, over capacity (the
queue or the batch cap cannot keep up), misses a TTFT SLO, misses a TPOT SLO, else feasible.
Kept per group and scheduler: the cheapest feasible configuration, the group's Pareto points
and its nearest miss (for explanations), so memory stays small however large the grid.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from rooflens.model.planner.curves import Curves
from rooflens.model.planner.gpu_prices import usd_per_million_tokens
from rooflens.model.planner.pareto import pareto_mask
from rooflens.model.planner.serving import LengthStats, Metrics, chunked, colocated, disaggregated
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.workload import ServingWorkload

OPT_SEP = " + "  # joins a configuration's optimizations (their own text may hold commas)
REASONS = ("does_not_fit", "over_capacity", "misses_ttft", "misses_tpot")


def configs(c: Curves, space: SweepSpace, mode: str) -> dict[str, np.ndarray]:
    """The grid of one group and scheduler: replica counts × batch caps, as flat arrays."""
    r_max = space.max_gpus // c.group.gpus_per_replica
    replicas = np.arange(1, r_max + 1, dtype=np.float64)
    caps = np.asarray(space.max_batches, dtype=np.float64)
    if mode == "disaggregated":
        n_p, n_d, mb = (a.ravel() for a in np.meshgrid(replicas, replicas, caps, indexing="ij"))
        keep = n_p + n_d <= r_max
        return {"prefill_replicas": n_p[keep], "decode_replicas": n_d[keep], "max_batch": mb[keep]}
    r, mb = (a.ravel() for a in np.meshgrid(replicas, caps, indexing="ij"))
    return {"prefill_replicas": np.zeros_like(r), "decode_replicas": r, "max_batch": mb}


def evaluate(
    c: Curves, space: SweepSpace, w: ServingWorkload, L: LengthStats, mode: str,
    grid: dict[str, np.ndarray], rate: float | np.ndarray | None = None,
) -> tuple[Metrics, np.ndarray]:  # fmt: skip
    """Serving metrics of a grid and the batch cap each configuration really gets, at the
    workload's rate or at `rate` (requests/s, one per configuration)."""
    rate = w.rate_per_s if rate is None else rate
    cap = np.minimum(grid["max_batch"], c.max_batch_memory)
    safe_cap = np.maximum(cap, 1.0)
    groups = float(c.group.attention_groups)  # EP: ep/tp attention groups per replica
    rate_d = rate / (grid["decode_replicas"] * groups)
    if mode == "colocated":
        m = colocated(c, L, rate_d, safe_cap)
    elif mode == "chunked":
        m = chunked(c, L, rate_d, safe_cap, space.chunk_tokens)
    else:
        rate_p = rate / (grid["prefill_replicas"] * groups)
        m = disaggregated(c, L, rate_p, rate_d, safe_cap)
    return m, cap


def classify(m: Metrics, cap: np.ndarray, w: ServingWorkload) -> np.ndarray:
    """Index into REASONS (4 = feasible) per configuration, first failing reason wins."""
    slo = w.slo
    inf = np.inf
    ttft = (m.ttft_p99_s > (slo.ttft_p99_s or inf)) | (m.ttft_mean_s > (slo.ttft_mean_s or inf))
    tpot = (m.tpot_p99_s > (slo.tpot_p99_s or inf)) | (m.tpot_mean_s > (slo.tpot_mean_s or inf))
    return np.select([cap < 1, ~m.stable, ttft, tpot], [0, 1, 2, 3], default=4)


def evaluate_group(
    c: Curves, space: SweepSpace, w: ServingWorkload, L: LengthStats
) -> tuple[int, dict[str, int], list[dict[str, Any]]]:
    counts = dict.fromkeys(REASONS, 0)
    rows: list[dict[str, Any]] = []
    n = 0
    for mode in space.modes:
        grid = configs(c, space, mode)
        size = grid["max_batch"].size
        n += size
        if c.max_batch_memory < 1:
            counts["does_not_fit"] += size
            continue
        m, cap = evaluate(c, space, w, L, mode, grid)
        verdict = classify(m, cap, w)
        for k, reason in enumerate(REASONS):
            counts[reason] += int(np.count_nonzero(verdict == k))
        n_gpus = (grid["prefill_replicas"] + grid["decode_replicas"]) * c.group.gpus_per_replica
        cost = n_gpus * c.usd_per_gpu_hour
        ok = np.flatnonzero(verdict == 4)
        pick: list[int] = []
        per_usd = None
        if space.objective == "goodput-per-dollar":
            per_usd = goodput(c, space, w, L, mode, grid) * 3600.0 / cost
        if ok.size:
            order = np.lexsort((m.ttft_p99_s[ok], m.tpot_p99_s[ok], cost[ok]))
            pick.append(int(ok[order[0]]))
            if per_usd is not None:  # the most goodput per dollar, then the cheapest
                pick.append(int(ok[np.lexsort((cost[ok], -per_dollar_key(per_usd[ok])))[0]]))
            tokens = w.rate_per_s * L.output_mean
            front = pareto_mask(tokens / n_gpus[ok], 1.0 / m.tpot_mean_s[ok])
            pick.extend(int(j) for j in ok[front])
        else:
            stable = np.flatnonzero(verdict >= 2)
            if stable.size:  # nearest miss: smallest worst ratio to an SLO, then cost
                worst = slo_ratio(m, w)[stable]
                pick.append(int(stable[np.lexsort((cost[stable], worst))[0]]))
        for j in dict.fromkeys(pick):
            rows.append(record(c, mode, grid, m, cap, j, int(verdict[j]), w, L))
            rows[-1]["slo_ratio"] = float(slo_ratio(m.take(np.array([j])), w)[0])
            if per_usd is not None:
                rows[-1]["goodput_requests_per_usd"] = float(per_usd[j])
                rows[-1]["goodput_requests_per_s"] = float(per_usd[j] * cost[j] / 3600.0)
    return n, counts, rows


def per_dollar_key(per_usd: np.ndarray) -> np.ndarray:
    """Goodput per dollar to 6 significant digits: R replicas have R× the goodput at R× the
    cost, equal up to rounding, and the tie must go to the cheapest."""
    return np.round(np.log(np.maximum(per_usd, 1e-300)) * 1e6)


GROWTH_STEPS, BISECTIONS = 40, 14  # doublings to bracket; halvings: 2^-14 of the bracket


Evaluator = Callable[[dict[str, np.ndarray], np.ndarray], "tuple[Metrics, np.ndarray]"]


def goodput(
    c: Curves, space: SweepSpace, w: ServingWorkload, L: LengthStats, mode: str,
    grid: dict[str, np.ndarray],
) -> np.ndarray:  # fmt: skip
    """Goodput per configuration of one group (goodput_of with `evaluate`)."""
    return goodput_of(partial(evaluate, c, space, w, L, mode), w, mode, grid)


def goodput_of(ev: Evaluator, w: ServingWorkload, mode: str, grid: dict[str, np.ndarray]
               ) -> np.ndarray:  # fmt: skip
    """Goodput per configuration: the highest arrival rate (requests/s) it serves while
    meeting every SLO (DistServe, Zhong et al. OSDI'24), 0 if none; `ev(grid, rate)` gives
    the metrics of a grid at per-configuration rates.

    Random routing splits the rate evenly, so R replicas serve exactly R times one replica's
    goodput. Disaggregated, TTFT depends on the prefill replicas' rate only and TPOT on the
    decode replicas' (serving.disaggregated), so the pair serves min(n_p·G_p, n_d·G_d): each
    side's goodput found with the other side unloaded. Each is a vectorised bisection over
    the distinct batch caps (feasibility falls as the rate rises, tests/model/planner)."""
    caps, where = np.unique(grid["max_batch"], return_inverse=True)
    one, idle = np.ones_like(caps), np.full_like(caps, 1e12)
    if mode != "disaggregated":
        unit = {"prefill_replicas": 0 * one, "decode_replicas": one, "max_batch": caps}
        return grid["decode_replicas"] * _max_rate(ev, w, unit)[where]
    prefill = {"prefill_replicas": one, "decode_replicas": idle, "max_batch": caps}
    decode = {"prefill_replicas": idle, "decode_replicas": one, "max_batch": caps}
    g_p = _max_rate(ev, w, prefill)[where]
    g_d = _max_rate(ev, w, decode)[where]
    return np.minimum(grid["prefill_replicas"] * g_p, grid["decode_replicas"] * g_d)


def _max_rate(ev: Evaluator, w: ServingWorkload, grid: dict[str, np.ndarray]) -> np.ndarray:
    def ok(rate: np.ndarray) -> np.ndarray:
        m, cap = ev(grid, rate)
        return classify(m, cap, w) == 4

    # Bracket [lo, hi = 2·lo) from the offered rate: double while feasible, or halve until
    # feasible; then bisect, so the goodput is found to 2^-BISECTIONS of itself.
    hi = np.full(grid["max_batch"].size, w.rate_per_s)
    lo = np.zeros(hi.size)
    falling = ~ok(hi)
    rising = ~falling
    for _ in range(GROWTH_STEPS):
        if rising.any():
            up = ok(hi) & rising
            lo, hi = np.where(up, hi, lo), np.where(up, 2 * hi, hi)
            rising = up
        if falling.any():
            down = ok(hi / 2) & falling
            lo = np.where(down, hi / 2, lo)
            hi = np.where(falling & ~down, hi / 2, hi)
            falling = falling & ~down
        if not (rising.any() or falling.any()):
            break
    for _ in range(BISECTIONS):
        mid = (lo + hi) / 2
        up = ok(mid)
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    return lo


def slo_ratio(m: Metrics, w: ServingWorkload) -> np.ndarray:
    """The worst metric / SLO ratio per configuration (≤ 1 meets every SLO)."""
    s = w.slo
    pairs = [(m.ttft_p99_s, s.ttft_p99_s), (m.tpot_p99_s, s.tpot_p99_s),
             (m.ttft_mean_s, s.ttft_mean_s), (m.tpot_mean_s, s.tpot_mean_s)]  # fmt: skip
    worst = np.zeros_like(m.ttft_p99_s)
    for value, target in pairs:
        if target is not None:
            worst = np.maximum(worst, value / target)
    return worst


def record(
    c: Curves, mode: str, grid: dict[str, np.ndarray], m: Metrics, cap: np.ndarray, j: int,
    verdict: int, w: ServingWorkload, L: LengthStats,
) -> dict[str, Any]:  # fmt: skip
    g = c.group
    n_p, n_d = int(grid["prefill_replicas"][j]), int(grid["decode_replicas"][j])
    n_gpus = (n_p + n_d) * g.gpus_per_replica
    tokens_per_s = w.rate_per_s * L.output_mean
    cost_per_hour = n_gpus * c.usd_per_gpu_hour
    batch = float(cap[j])
    return {
        "gpu": g.gpu, "engine": g.engine, "mode": mode, "n_gpus": n_gpus, "replicas": n_p + n_d,
        "prefill_replicas": n_p, "decode_replicas": n_d, "tp": g.tp, "pp": g.pp, "ep": g.ep,
        "weight_dtype": g.weight_dtype, "act_dtype": g.act_dtype, "kv_dtype": g.kv_dtype,
        "scheme": c.scheme,
        "opts": OPT_SEP.join(g.opts), "max_batch": int(grid["max_batch"][j]), "batch": int(batch),
        "mean_batch": float(m.mean_batch[j]),
        "ttft_s": float(m.ttft_mean_s[j]), "ttft_p99_s": float(m.ttft_p99_s[j]),
        "tpot_s": float(m.tpot_mean_s[j]), "tpot_p99_s": float(m.tpot_p99_s[j]),
        "output_tokens_per_s": tokens_per_s,
        "tokens_per_s_per_gpu": tokens_per_s / n_gpus,
        "tokens_per_s_per_user": 1.0 / float(m.tpot_mean_s[j]),
        "usd_per_gpu_hour": c.usd_per_gpu_hour, "cost_per_hour": cost_per_hour,
        "cost_per_million_tokens": usd_per_million_tokens(cost_per_hour, tokens_per_s),
        "memory_per_gpu_bytes": c.memory_bytes(batch), "capacity_bytes": c.capacity_bytes,
        "weights_bytes": c.weights_bytes, "max_batch_memory": int(c.max_batch_memory),
        "load": float(m.load[j]), "feasible": verdict == 4,
        "prefill_gpu": g.gpu if mode == "disaggregated" else "",
        "prefill_tp": g.tp if mode == "disaggregated" else 0,
        "prefill_act_dtype": g.act_dtype if mode == "disaggregated" else "",
        "reason": REASONS[verdict] if verdict < 4 else "",
    }  # fmt: skip
