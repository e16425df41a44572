"""Plain-language reasons: what binds the recommended configuration (memory, capacity, TTFT,
TPOT) and why fewer GPUs would not do; and, when nothing is feasible, what is nearest: more
GPUs, other GPU types, the largest rate the requested hardware sustains, the SLOs it can meet
(the loosened SLOs themselves come from relax.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from rooflens.hardware.profiles import DEFAULT_ENGINE, ENGINE_NAMES
from rooflens.io.units import fmt_bytes, fmt_number, fmt_time
from rooflens.model.planner.curves import Curves
from rooflens.model.planner.grid import REASONS, classify, evaluate
from rooflens.model.planner.relax import nearest_relaxation, relaxation_line
from rooflens.model.planner.serving import LengthStats
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.sweep import SweepResult, first_record
from rooflens.model.planner.workload import ServingWorkload
from rooflens.model.specs.quant import precision_label

MODE_LABEL = {
    "colocated": "prefill and decode on the same GPUs (prefill stalls decode)",
    "chunked": "chunked prefill",
    "disaggregated": "disaggregated prefill/decode replicas",
}
REASON_LABEL = {
    "does_not_fit": "does not fit in memory",
    "over_capacity": "cannot keep up (queue or batch cap saturates)",
    "misses_ttft": "misses the TTFT SLO",
    "misses_tpot": "misses the TPOT SLO",
}


def engine_id(row: Mapping[Any, Any]) -> str:
    """The serving engine of a plan row, as `--engine` names it ('trtllm'; a table's cell, as
    its GPU is an id)."""
    return str(row.get("engine") or DEFAULT_ENGINE)


def engine_name(row: Mapping[Any, Any]) -> str:
    """The serving engine of a plan row, as prose names it ('TensorRT-LLM')."""
    return ENGINE_NAMES.get(engine_id(row), engine_id(row))


def describe(row: dict[str, Any]) -> str:
    """One line naming a configuration, its serving engine included."""
    unit = f"TP {row['tp']}" + (f" × EP {row['ep']}" if row["ep"] > 1 else "")
    unit += f" × PP {row['pp']}" if row["pp"] > 1 else ""
    if row["mode"] == "disaggregated":
        layout = (
            f"{row['prefill_replicas']} prefill + {row['decode_replicas']} decode "
            f"replicas of {unit}"
        )
    else:
        layout = f"{row['replicas']} replica{'s' if row['replicas'] > 1 else ''} of {unit}"
    opts = f", opts {row['opts']}" if row.get("opts") else ""
    gpu = row["gpu"]
    precision = precision_label(row["weight_dtype"], row["act_dtype"], row["kv_dtype"],
                                row.get("scheme", ""))  # fmt: skip
    if row["mode"] == "disaggregated" and row.get("prefill_gpu") not in (None, "", gpu):
        gpu = f"GPUs: prefill on {row['prefill_gpu']} TP {row['prefill_tp']}, decode on {gpu}"
        return (
            f"{row['n_gpus']} {gpu} ({layout}) on {engine_name(row)}, {precision}, "
            f"{MODE_LABEL[row['mode']]}, max batch {row['batch']}{opts}"
        )
    return (
        f"{row['n_gpus']} × {gpu} ({layout}) on {engine_name(row)}, {precision}, "
        f"{MODE_LABEL[row['mode']]}, max batch {row['batch']}{opts}"
    )


def _grid_of(row: dict[str, Any], prefill: int, decode: int) -> dict[str, np.ndarray]:
    return {
        "prefill_replicas": np.array([float(prefill)]),
        "decode_replicas": np.array([float(decode)]),
        "max_batch": np.array([float(row["max_batch"])]),
    }


def fewer_gpus_reason(
    row: dict[str, Any], c: Curves, space: SweepSpace, w: ServingWorkload
) -> str | None:
    """Why one replica fewer fails, e.g. 'with 1 replica it would miss the TTFT SLO (…)'."""
    tries = []
    if row["mode"] == "disaggregated":
        if row["prefill_replicas"] > 1:
            tries.append((row["prefill_replicas"] - 1, row["decode_replicas"], "prefill"))
        if row["decode_replicas"] > 1:
            tries.append((row["prefill_replicas"], row["decode_replicas"] - 1, "decode"))
    elif row["replicas"] > 1:
        tries.append((0, row["replicas"] - 1, ""))
    out = []
    for n_p, n_d, side in tries:
        m, cap = evaluate(c, space, w, LengthStats.of(w), row["mode"], _grid_of(row, n_p, n_d))
        verdict = int(classify(m, cap, w)[0])
        if verdict == 4:
            continue
        detail = {
            "misses_ttft": f" (TTFT p99 {fmt_time(float(m.ttft_p99_s[0]))})",
            "misses_tpot": f" (TPOT p99 {fmt_time(float(m.tpot_p99_s[0]))})",
        }.get(REASONS[verdict], "")
        label = f"{side} " if side else ""
        out.append(f"one {label}replica fewer {REASON_LABEL[REASONS[verdict]]}{detail}")
    return "; ".join(out) or None


def explain_recommendation(
    row: dict[str, Any], c: Curves, space: SweepSpace, w: ServingWorkload
) -> list[str]:
    slo = w.slo
    lines = [
        f"Recommended: {describe(row)}.",
        f"Cost: ${fmt_number(row['cost_per_hour'])} per hour for "
        f"{row['output_tokens_per_s']:,.0f} output tokens/s = "
        f"${fmt_number(row['cost_per_million_tokens'])} per million output tokens.",
    ]
    memory_caps_batch = row["batch"] >= row["max_batch_memory"]
    ratios = {"memory": 1.0 if memory_caps_batch else 0.0, "capacity": row["load"]}
    for name, value, target in (
        ("TTFT", row["ttft_p99_s"], slo.ttft_p99_s),
        ("TPOT", row["tpot_p99_s"], slo.tpot_p99_s),
    ):
        if target:
            ratios[name] = value / target
    binding = max(ratios, key=lambda k: ratios[k])
    head = []
    for name, value, target in (
        ("TTFT p99", row["ttft_p99_s"], slo.ttft_p99_s),
        ("TPOT p99", row["tpot_p99_s"], slo.tpot_p99_s),
    ):
        tail = f" of {fmt_time(target)} SLO" if target else ""
        head.append(f"{name} {fmt_time(value)}{tail}")
    head.append(f"load {row['load']:.0%} of capacity")
    head.append(
        f"memory {fmt_bytes(row['memory_per_gpu_bytes'])} of {fmt_bytes(row['capacity_bytes'])}"
        f" per GPU at a full batch (weights {fmt_bytes(row['weights_bytes'])}; KV room for "
        f"{row['max_batch_memory']} sequences)"
    )
    lines.append("Headroom: " + ", ".join(head) + ".")
    what = {
        "memory": "memory (the KV cache caps the batch)",
        "capacity": "throughput (the batch or prefill queue is near saturation)",
        "TTFT": "the TTFT SLO",
        "TPOT": "the TPOT SLO",
    }[binding]
    lines.append(f"What binds: {what}.")
    fewer = fewer_gpus_reason(row, c, space, w)
    if fewer:
        lines.append(f"Why not fewer GPUs: {fewer}.")
    else:
        per_replica = row["n_gpus"] // row["replicas"]
        lines.append(
            f"Why not fewer GPUs: this is the smallest layout of its kind ({per_replica}"
            " GPU(s) per replica, one replica per role); every cheaper configuration swept "
            "either does not fit, cannot keep up or misses an SLO."
        )
    return lines


Replanner = Callable[[SweepSpace, ServingWorkload], SweepResult]


ALTERNATIVES_HINT = "More GPUs, other GPU types and the largest sustainable rate were not tried"
# A first sweep over at most this many groups (GPU, TP, PP, EP, weight dtype, options; ~7 ms each
# to price on a 2-core VM, 0.25 s for 32) makes the ~14 re-sweeps of the alternatives cheap. It
# is counted, not timed, so one command prints the same report on any machine and under any load.
CHEAP_SWEEP_GROUPS = 32


def explain_infeasible(
    space: SweepSpace, w: ServingWorkload, result: SweepResult, replan: Replanner,
    alternatives: bool | None = None,
) -> tuple[list[str], list[dict[str, Any]], dict[str, Any] | None]:  # fmt: skip
    """Why nothing is feasible, the nearest feasible relaxation of the SLOs (relax.py, from
    this sweep's own rows), and the nearest alternatives (each a re-plan: more GPUs, other GPU
    types, a lower rate). alternatives=None runs those re-plans only when no SLO relaxation
    exists and the first sweep was small (CHEAP_SWEEP_GROUPS); True always, False never."""
    n = max(result.n_configs, 1)
    lines = [
        f"No configuration of {space.model} on {', '.join(space.gpus)} run by "
        f"{', '.join(ENGINE_NAMES[e] for e in space.engines)} (at most "
        f"{space.max_gpus} GPUs) serves {w.rate_per_s:g} requests/s within {w.slo.label()}.",
        f"Of {result.n_configs:,} configurations: "
        + ", ".join(
            f"{count:,} ({count / n:.0%}) {REASON_LABEL[reason]}"
            for reason, count in result.rejected.items()
            if count
        )
        + ".",
    ]
    if result.curves:
        lightest = min(result.curves.values(), key=lambda c: c.fixed_bytes / c.capacity_bytes)
        g = lightest.group
        lines.append(
            f"Smallest footprint tried: {g.gpu} TP {g.tp}{f' × EP {g.ep}' if g.ep > 1 else ''}"
            f" × PP {g.pp}, {g.weight_dtype} weights "
            f"need {fmt_bytes(lightest.weights_bytes)} per GPU (+ runtime and activations "
            f"{fmt_bytes(lightest.fixed_bytes - lightest.weights_bytes)}) of "
            f"{fmt_bytes(lightest.capacity_bytes)}."
        )
    elif result.skipped:
        lines.append("Skipped: " + "; ".join(result.skipped) + ".")
    relax = nearest_relaxation(result, space, w)
    if relax is not None:
        miss = relax["nearest"]
        lines.append(
            f"Nearest miss: {describe(miss)} reaches TTFT p99 {fmt_time(miss['ttft_p99_s'])} "
            f"and TPOT p99 {fmt_time(miss['tpot_p99_s'])} (at worst "
            f"{miss['slo_ratio']:.3g}× its SLO, the closest of any configuration that fits and "
            "keeps up)."
        )
        relax["line"] = relaxation_line(relax, describe)
        lines.append(relax["line"])
    if alternatives is None:
        alternatives = relax is None and result.groups <= CHEAP_SWEEP_GROUPS
    if not alternatives:
        lines.append(
            f"{ALTERNATIVES_HINT} (each is a re-sweep, together at least 14× this one's "
            f"{result.elapsed_s:.2g} s): rooflens plan --explain-alternatives tries them."
        )
        return lines, [], relax
    found = nearest_alternatives(space, w, replan)
    found.sort(key=lambda a: (a.get("feasible") is False, a.get("cost_per_hour", 0.0)))
    for alt in found:
        lines.append(f"Alternative ({alt['change']}): {alt['summary']}")
    if not found:
        lines.append("No alternative within 512 GPUs of any preset type meets these SLOs.")
    return lines, found, relax


def nearest_alternatives(
    space: SweepSpace, w: ServingWorkload, replan: Replanner
) -> list[dict[str, Any]]:
    from rooflens.hardware.presets import gpu_ids
    from rooflens.model.planner.gpu_prices import default_prices

    priced = tuple(g for g in gpu_ids() if g in default_prices() or g in w.prices_usd_per_gpu_hour)
    wide = tuple(dict.fromkeys((*space.weight_dtypes, "int8", "int4")))
    lean = {"modes": tuple(m for m in space.modes if m != "disaggregated") or ("chunked",)}
    more = min(512, max(8 * space.max_gpus, 64))
    tries = [
        ("more GPUs of the same type, int8/int4 weights allowed",
         space.model_copy(update={"max_gpus": more, "weight_dtypes": wide, **lean})),
        (f"any GPU type, at most {space.max_gpus} GPUs",
         space.model_copy(update={"gpus": priced, "weight_dtypes": wide, **lean})),
        (f"any GPU type, up to {more} GPUs", space.model_copy(
            update={"gpus": priced, "max_gpus": more, "weight_dtypes": wide, **lean})),
    ]  # fmt: skip
    out: list[dict[str, Any]] = []
    for change, relaxed in tries:
        result = replan(relaxed, w)
        found = result.feasible
        if len(found):
            best = first_record(found.sort_values(["cost_per_hour", "n_gpus", "tpot_p99_s"]))
            usd = fmt_number(best["cost_per_million_tokens"])
            summary = f"{describe(best)}: ${usd} per million output tokens"
            out.append({"change": change, "summary": summary, **best})
        elif len(result.rows):
            miss = first_record(result.rows.sort_values(["slo_ratio", "cost_per_hour"]))
            summary = (
                f"still infeasible; closest is {describe(miss)} at TTFT p99 "
                f"{fmt_time(miss['ttft_p99_s'])}, TPOT p99 {fmt_time(miss['tpot_p99_s'])}"
            )
            out.append({"change": change, "summary": summary, "feasible": False, **miss})
        else:
            top = max(result.rejected, key=lambda k: result.rejected[k])
            summary = (
                f"still infeasible: of {result.n_configs:,} configurations most "
                f"({result.rejected[top]:,}) {REASON_LABEL[top]}"
            )
            out.append({"change": change, "summary": summary, "feasible": False})
    rate = max_sustainable_rate(space, w, replan)
    if rate > 0:
        out.append({
            "change": "lower request rate on the requested hardware",
            "summary": f"it meets the SLOs up to about {rate:.3g} requests/s",
            "rate_per_s": rate,
        })  # fmt: skip
    return out


def max_sustainable_rate(space: SweepSpace, w: ServingWorkload, replan: Replanner) -> float:
    """Largest rate (bisection, 10 steps on a log scale) with a feasible configuration."""
    lo, hi = 0.0, w.rate_per_s
    if not len(replan(space, w.model_copy(update={"rate_per_s": hi * 1e-3})).feasible):
        return 0.0
    lo = hi * 1e-3
    for _ in range(10):
        mid = float(np.sqrt(lo * hi))
        if len(replan(space, w.model_copy(update={"rate_per_s": mid})).feasible):
            lo = mid
        else:
            hi = mid
    return lo
