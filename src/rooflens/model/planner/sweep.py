"""The sweep: every combination of GPU type, TP, PP, EP, weight/KV precision, optimization
toggles and serving engine is a group priced once (curves.py); inside a group, replica counts ×
batch caps × schedulers are numpy arrays evaluated in one pass of the serving model (grid.py,
serving.py).
What is searched is space.py's SweepSpace; this module owns the loop over groups (run_sweep).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.profiles import DEFAULT_ENGINE, ENGINE_NAMES
from rooflens.model.memo import Memo
from rooflens.model.optimizations import parse_opt
from rooflens.model.optimizations.sliding_window import streaming_spec
from rooflens.model.planner.curves import Curves, Group, build_curves
from rooflens.model.planner.grid import OPT_SEP, REASONS, evaluate_group
from rooflens.model.planner.mixed import evaluate_pairs
from rooflens.model.planner.serving import LengthStats
from rooflens.model.planner.serving_profile import with_step_overhead
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.trace import RequestTrace
from rooflens.model.planner.workload import ServingWorkload
from rooflens.model.specs.presets import get_model
from rooflens.model.specs.spec import ModelSpec

# A group's curves do not depend on the arrival rate or the SLOs, only on the model, the lengths
# and the sweep's pricing settings: re-planning another load (the planner's what-if loop, the
# alternatives an infeasible plan tries) reuses them. A plan over every GPU prices ~300 groups.
# (Calibration profiles, prices and presets are read once per process, as everywhere else.)
_CURVES: Memo[Curves] = Memo(1024)
NOT_IN_CURVES = {"rate_per_s", "slo"}  # the ServingWorkload fields build_curves never reads


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
    def groups(self) -> int:
        """Groups the sweep priced or skipped (GPU, TP, PP, EP, weight dtype, options)."""
        return len(self.curves) + sum(self.skipped.values())

    @property
    def feasible(self) -> pd.DataFrame:
        if self.rows.empty:
            return self.rows
        return self.rows[self.rows["feasible"]]


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """DataFrame rows as plain dicts with str keys and Python scalars."""
    return [{str(k): v.item() if isinstance(v, np.generic) else v for k, v in r.items()}
            for r in frame.to_dict("records")]  # fmt: skip


def first_record(frame: pd.DataFrame) -> dict[str, Any]:
    """The first row as `records` gives it (converting only that row: a sweep's frame has
    thousands)."""
    return records(frame.head(1))[0]


def group_of(row: dict[str, Any]) -> Group:
    opts = tuple(o for o in str(row.get("opts") or "").split(OPT_SEP) if o)
    return Group(row["gpu"], int(row["tp"]), int(row["pp"]), int(row["ep"]), row["weight_dtype"],
                 row["act_dtype"], row["kv_dtype"], opts,
                 row.get("engine") or DEFAULT_ENGINE)  # fmt: skip


def space_notes(space: SweepSpace, spec: ModelSpec) -> list[str]:
    """What the grid leaves out, said once."""
    notes = []
    eps = [e for e in space.ep if e > 1]
    if eps and not spec.is_moe:
        notes.append(f"--ep {','.join(map(str, eps))}: {spec.id} is dense; only EP 1 was swept")
    elif eps and not any(e % t == 0 for e in eps for t in space.tp):
        notes.append("--ep: no EP degree is a multiple of a --tp degree; only EP 1 was swept")
    if len(space.engines) > 1 and space.profile == "ideal":
        names = ", ".join(ENGINE_NAMES[e] for e in space.engines)
        notes.append(f"--profile ideal prices every engine alike (the datasheet bound): {names} "
                     "tie, and a tie lists the first")  # fmt: skip
    if space.serving_profile:
        notes.append(
            f"serving profile {space.serving_profile}: {space.step_overhead_s * 1e3:.2f} "
            f"ms host overhead per step, batch caps ≤ {max(space.max_batches)}"
        )
    return notes


def check_trace_fits(trace: RequestTrace, max_context: int, model: str) -> None:
    """Every request of a trace must fit the model's context (prompt + output − 1 positions):
    a request the engine would refuse is not load to plan for. Refused by count."""
    need = np.asarray(trace.input_len) + np.asarray(trace.output_len) - 1
    over = need > max_context
    if over.any():
        raise RooflensError(
            f"{trace.path}: {int(over.sum()):,} of {need.size:,} requests need more than "
            f"{model}'s context of {max_context:,} tokens (the longest {int(need.max()):,}); "
            "drop them from the trace, or plan a model with a longer context"
        )


def run_sweep(
    space: SweepSpace,
    workload: ServingWorkload,
    progress: Callable[[int, int], None] | None = None,
) -> SweepResult:
    start = time.perf_counter()
    parsed = {name: parse_opt(name) for name in (*space.opts, *space.sweep_opts)}
    # a sliding window in force runs a model past its context, as on every face (scenario_of)
    longest = int(np.ceil(workload.prompt.p99() + workload.output.p99() - 1))
    spec, assumption = streaming_spec(get_model(space.model), [parsed[o] for o in space.opts],
                                      longest)  # fmt: skip
    if assumption:
        warnings.warn(assumption, stacklevel=2)
    if workload.trace is not None:
        check_trace_fits(workload.trace, spec.max_context, spec.id)
    if workload.prompt.mean() + workload.output.mean() - 1 > spec.max_context:
        raise RooflensError(
            f"mean prompt + output ({workload.prompt.mean():.0f} + {workload.output.mean():.0f}"
            f" tokens) exceeds {spec.id}'s max context {spec.max_context}"
        )
    L = LengthStats.of(workload)
    groups = space.groups()
    rejected = dict.fromkeys(REASONS, 0)
    skipped: dict[str, int] = {}
    kept: list[dict[str, Any]] = []
    curves: dict[Group, Curves] = {}
    n_configs = 0
    lengths = workload.model_dump_json(exclude=NOT_IN_CURVES)
    priced_by = (
        spec.model_dump_json(),
        lengths,
        space.profile,
        space.chunk_tokens,
        space.overhead_bytes,
        space.kv_offload,
    )  # fmt: skip (the engine: in the group)
    for i, group in enumerate(groups):
        try:
            c = _CURVES.get(
                (priced_by, group),
                partial(
                    build_curves,
                    spec,
                    group,
                    workload,
                    [parsed[o] for o in group.opts],
                    profile=space.profile,
                    chunk_tokens=space.chunk_tokens,
                    overhead_bytes=space.overhead_bytes,
                    kv_offload=space.kv_offload,
                ),
            )
            c = with_step_overhead(c, space.step_overhead_s)
        except RooflensError as exc:
            if "no price" in str(exc) or "--opt" in str(exc):
                raise
            reason = str(exc).removeprefix("invalid scenario: ")  # whole: it says what to do
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
    if space.prefill_gpus and space.decode_gpus and "disaggregated" in space.modes:
        n, counts, rows = evaluate_pairs(space, workload, L, curves)
        n_configs += n
        for key, value in counts.items():
            rejected[key] += value
        kept.extend(rows)
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
