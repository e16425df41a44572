"""The sweep: every combination of GPU type, TP, PP, EP, weight/KV precision and optimization
toggles is a group priced once (curves.py); inside a group, replica counts × batch caps ×
schedulers are numpy arrays evaluated in one pass of the serving model (serving.py).

Each configuration is classified in this order: does not fit in memory, over capacity (the
queue or the batch cap cannot keep up), misses a TTFT SLO, misses a TPOT SLO, else feasible.
Kept per group and scheduler: the cheapest feasible configuration, the group's Pareto points
and its nearest miss (for explanations), so memory stays small however large the grid.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from hardware.errors import RooflensError
from hardware.presets import get_gpu
from model.dtypes import default_act_dtype
from model.optimizations import parse_opt
from model.planner.curves import Curves, Group, build_curves
from model.planner.pareto import pareto_mask
from model.planner.prices import usd_per_million_tokens
from model.planner.serving import MODES, LengthStats, Metrics, chunked, colocated, disaggregated
from model.planner.workload import ServingWorkload
from model.presets import get_model
from model.scenario import DEFAULT_OVERHEAD_BYTES
from model.spec import ModelSpec

OPT_SEP = " + "  # joins a configuration's optimizations (their own text may hold commas)
REASONS = ("does_not_fit", "over_capacity", "misses_ttft", "misses_tpot")
DEFAULT_MAX_BATCHES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


class SweepSpace(BaseModel):
    """What to search over. Every tuple is a dimension of the grid."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    gpus: tuple[str, ...]
    tp: tuple[int, ...] = (1, 2, 4, 8)
    pp: tuple[int, ...] = (1,)
    ep: tuple[int, ...] = (1,)
    weight_dtypes: tuple[str, ...] = ("bf16", "fp8")
    kv_dtypes: tuple[str, ...] = ("bf16", "fp8")
    max_batches: tuple[int, ...] = DEFAULT_MAX_BATCHES
    modes: tuple[str, ...] = MODES
    max_gpus: int = Field(default=64, gt=0)
    chunk_tokens: int = Field(default=2048, gt=0, description="chunked prefill token budget")
    profile: str = "calibrated"
    opts: tuple[str, ...] = ()
    sweep_opts: tuple[str, ...] = Field(default=(), description="each tried on and off")
    overhead_bytes: float = DEFAULT_OVERHEAD_BYTES

    @field_validator("modes")
    @classmethod
    def _modes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [m for m in value if m not in MODES]
        if bad:
            raise ValueError(f"unknown scheduler '{bad[0]}': use {', '.join(MODES)}")
        return value

    def groups(self) -> list[Group]:
        """Every combination; EP only as a multiple of TP (each EP GPU holds whole experts and
        attention runs on ep/tp TP groups), and only what fits in max_gpus."""
        variants = [
            tuple(self.opts) + tuple(o for o, on in zip(self.sweep_opts, flags, strict=True) if on)
            for flags in itertools.product((False, True), repeat=len(self.sweep_opts))
        ]
        out = []
        for gpu, tp, pp, ep, w, kv, opts in itertools.product(
            self.gpus, self.tp, self.pp, self.ep, self.weight_dtypes, self.kv_dtypes, variants
        ):
            group = Group(gpu, tp, pp, ep, w, act_dtype(gpu, w), kv, opts)
            if (ep == 1 or ep % tp == 0) and group.gpus_per_replica <= self.max_gpus:
                out.append(group)
        return out


def act_dtype(gpu: str, weight_dtype: str) -> str:
    """fp8 weights run W8A8-FP8 where the GPU has fp8 units, else weight-only (bf16 math)."""
    return default_act_dtype(weight_dtype, get_gpu(gpu).peak_flops_per_s)


@dataclass
class SweepResult:
    rows: pd.DataFrame  # kept configurations, one per row
    n_configs: int
    rejected: dict[str, int]
    elapsed_s: float
    curves: dict[Group, Curves]
    skipped: dict[str, int] = field(default_factory=dict)  # group-level reasons
    notes: list[str] = field(default_factory=list)

    @property
    def feasible(self) -> pd.DataFrame:
        if self.rows.empty:
            return self.rows
        return self.rows[self.rows["feasible"]]


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """DataFrame rows as plain dicts with str keys and Python scalars."""
    return [{str(k): v.item() if isinstance(v, np.generic) else v for k, v in r.items()}
            for r in frame.to_dict("records")]  # fmt: skip


def group_of(row: dict[str, Any]) -> Group:
    opts = tuple(o for o in str(row.get("opts") or "").split(OPT_SEP) if o)
    return Group(row["gpu"], int(row["tp"]), int(row["pp"]), int(row["ep"]), row["weight_dtype"],
                 row["act_dtype"], row["kv_dtype"], opts)  # fmt: skip


def space_notes(space: SweepSpace, spec: ModelSpec) -> list[str]:
    """What the grid leaves out, said once."""
    notes = []
    eps = [e for e in space.ep if e > 1]
    if eps and not spec.is_moe:
        notes.append(f"--ep {','.join(map(str, eps))}: {spec.id} is dense; only EP 1 was swept")
    elif eps and not any(e % t == 0 for e in eps for t in space.tp):
        notes.append("--ep: no EP degree is a multiple of a --tp degree; only EP 1 was swept")
    return notes


def run_sweep(
    space: SweepSpace,
    workload: ServingWorkload,
    progress: Callable[[int, int], None] | None = None,
) -> SweepResult:
    start = time.perf_counter()
    spec = get_model(space.model)
    if workload.prompt.mean() + workload.output.mean() - 1 > spec.max_context:
        raise RooflensError(
            f"mean prompt + output ({workload.prompt.mean():.0f} + {workload.output.mean():.0f}"
            f" tokens) exceeds {spec.id}'s max context {spec.max_context}"
        )
    parsed = {name: parse_opt(name) for name in (*space.opts, *space.sweep_opts)}
    L = LengthStats.of(workload)
    groups = space.groups()
    rejected = dict.fromkeys(REASONS, 0)
    skipped: dict[str, int] = {}
    kept: list[dict[str, Any]] = []
    curves: dict[Group, Curves] = {}
    n_configs = 0
    for i, group in enumerate(groups):
        try:
            c = build_curves(
                spec,
                group,
                workload,
                [parsed[o] for o in group.opts],
                profile=space.profile,
                chunk_tokens=space.chunk_tokens,
                overhead_bytes=space.overhead_bytes,
            )
        except RooflensError as exc:
            if "no price" in str(exc) or "--opt" in str(exc):
                raise
            reason = str(exc).split(":")[-1].strip()[:80]
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        except (TypeError, ValueError) as exc:
            names = ", ".join(group.opts) or "the default stack"
            raise RooflensError(f"{names} failed on array inputs ({exc}); not sweepable") from None
        curves[group] = c
        n, counts, rows = evaluate_group(c, space, workload, L)
        n_configs += n
        for key, value in counts.items():
            rejected[key] += value
        kept.extend(rows)
        if progress is not None:
            progress(i + 1, len(groups))
    rows_frame = pd.DataFrame(kept)
    return SweepResult(
        rows=rows_frame,
        n_configs=n_configs,
        rejected=rejected,
        elapsed_s=time.perf_counter() - start,
        curves=curves,
        skipped=skipped,
        notes=space_notes(space, spec),
    )


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
    grid: dict[str, np.ndarray],
) -> tuple[Metrics, np.ndarray]:  # fmt: skip
    """Serving metrics of a grid and the batch cap each configuration really gets."""
    cap = np.minimum(grid["max_batch"], c.max_batch_memory)
    safe_cap = np.maximum(cap, 1.0)
    groups = float(c.group.attention_groups)  # EP: ep/tp attention groups per replica
    rate_d = w.rate_per_s / (grid["decode_replicas"] * groups)
    if mode == "colocated":
        m = colocated(c, L, rate_d, safe_cap)
    elif mode == "chunked":
        m = chunked(c, L, rate_d, safe_cap, space.chunk_tokens)
    else:
        rate_p = w.rate_per_s / (grid["prefill_replicas"] * groups)
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
        if ok.size:
            order = np.lexsort((m.ttft_p99_s[ok], m.tpot_p99_s[ok], cost[ok]))
            pick.append(int(ok[order[0]]))
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
    return n, counts, rows


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
        "gpu": g.gpu, "mode": mode, "n_gpus": n_gpus, "replicas": n_p + n_d,
        "prefill_replicas": n_p, "decode_replicas": n_d, "tp": g.tp, "pp": g.pp, "ep": g.ep,
        "weight_dtype": g.weight_dtype, "act_dtype": g.act_dtype, "kv_dtype": g.kv_dtype,
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
        "reason": REASONS[verdict] if verdict < 4 else "",
    }  # fmt: skip
