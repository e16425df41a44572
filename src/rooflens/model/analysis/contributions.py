"""What each optimization in force buys: its effect on TTFT, TPOT, throughput, memory and the
largest batch that fits, measured against the same stack without it (leave-one-out).

Leave-one-out attributes interactions to every member of a pair (quantization and offload
each look bigger together than alone), so the effects need not multiply up to the whole stack's;
model/analysis/waterfall.py gives the cumulative, order-dependent view instead.

Serving throughput at the memory limit (`max_batch_output_tokens_per_s`) re-prices the workload
at the largest batch that fits, which is how a memory saving (paging, KV quantization, GQA)
turns into tokens per second (Kwon et al. 2023, vLLM §6).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rooflens.hardware.errors import RooflensError
from rooflens.model.memo import Memo
from rooflens.model.optimizations import parse_opt
from rooflens.model.optimizations.base import Optimization
from rooflens.model.predict.api import make_pipeline
from rooflens.model.predict.scenario import Scenario
from rooflens.model.predict.steps import Prediction


def as_optimizations(opts: Sequence[str | Optimization]) -> list[Optimization]:
    return [parse_opt(o) if isinstance(o, str) else o for o in opts]


def at_batch(sc: Scenario, batch: int) -> Scenario:
    return sc.model_copy(update={"workload": sc.workload.model_copy(update={"batch": batch})})


# Throughput at the memory limit does not depend on the scenario's own batch, so a what-if that
# moves only the batch (the dashboard's sidebar, a waterfall per batch) reuses it: memoised on
# the scenario at that batch and the optimizations' labels (which name every non-default value).
_MAX_BATCH_MEMO: Memo[float] = Memo(512)


def max_batch_throughput(
    sc: Scenario, opts: Sequence[Optimization], max_batch: int
) -> float | None:
    """Output tokens/s with the batch raised (or lowered) to the largest that fits."""
    if max_batch < 1:
        return None
    at_max = at_batch(sc, max_batch)
    key = (at_max.model_dump_json(), tuple(o.label() for o in opts))
    return _MAX_BATCH_MEMO.get(
        key, lambda: make_pipeline(at_max, opts).predict().output_tokens_per_s
    )


def summary(sc: Scenario, opts: Sequence[Optimization], pred: Prediction) -> dict[str, Any]:
    """The headline numbers one stack gives (SI units)."""
    mem = pred.memory
    return {
        "ttft_s": pred.ttft_s,
        "tpot_s": pred.tpot_s,
        "e2e_s": pred.e2e_s,
        "output_tokens_per_s": pred.output_tokens_per_s,
        "memory_bytes": mem.total_bytes,
        "fits": mem.fits,
        "max_batch": mem.max_batch,
        "max_batch_output_tokens_per_s": max_batch_throughput(sc, opts, mem.max_batch),
    }


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def effect(with_: dict[str, Any], without: dict[str, Any]) -> dict[str, Any]:
    """Side by side, with the change each metric shows (speedups > 1 are gains)."""
    tput = "max_batch_output_tokens_per_s"
    return {
        "ttft_s": {
            "with": with_["ttft_s"],
            "without": without["ttft_s"],
            "speedup": ratio(without["ttft_s"], with_["ttft_s"]),
        },
        "tpot_s": {
            "with": with_["tpot_s"],
            "without": without["tpot_s"],
            "speedup": ratio(without["tpot_s"], with_["tpot_s"]),
        },
        "output_tokens_per_s": {
            "with": with_["output_tokens_per_s"],
            "without": without["output_tokens_per_s"],
            "gain": ratio(with_["output_tokens_per_s"], without["output_tokens_per_s"]),
        },
        "memory_bytes": {
            "with": with_["memory_bytes"],
            "without": without["memory_bytes"],
            "saved_bytes": without["memory_bytes"] - with_["memory_bytes"],
        },
        "max_batch": {"with": with_["max_batch"], "without": without["max_batch"]},
        tput: {
            "with": with_[tput],
            "without": without[tput],
            "gain": ratio(with_[tput], without[tput]),
        },
    }


def contributions(
    sc: Scenario, opts: Sequence[str | Optimization], pred: Prediction | None = None
) -> list[dict[str, Any]]:
    """One entry per optimization in force: name, label, and `effect` against the stack
    without it. An optimization whose removal leaves an invalid stack gets an `error`."""
    parsed = as_optimizations(opts)
    labels = [
        o.strip() if isinstance(o, str) else p.label() for o, p in zip(opts, parsed, strict=True)
    ]
    if not parsed:
        return []
    full_pred = pred or make_pipeline(sc, parsed).predict()
    full = summary(sc, parsed, full_pred)
    out: list[dict[str, Any]] = []
    for i, opt in enumerate(parsed):
        rest = parsed[:i] + parsed[i + 1 :]
        entry: dict[str, Any] = {"name": opt.name, "label": labels[i]}
        try:
            without = summary(sc, rest, make_pipeline(sc, rest).predict())
        except RooflensError as exc:
            entry["error"] = str(exc)
        else:
            entry.update(effect(full, without))
        out.append(entry)
    return out
