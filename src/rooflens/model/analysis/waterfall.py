"""The cumulative waterfall: from a naive baseline to the full stack, one optimization at a
time, the way "Towards 100x speedup" (Yao Fu, 2023) adds buffs one by one.

A stack is a list of registered optimizations (any of them, issue-4's included). Those that
switch a default off (`no-kv-cache`, `eager-attention`, `contiguous-kv`: each declares
`switches_off`) form the baseline together; the waterfall then drops them one by one, in the
order given (turning the KV cache, FlashAttention, paging back on), and adds the others in order.
Every stage reports TTFT, TPOT, throughput at the workload's batch, memory, the largest batch
that fits, throughput at that batch, and its speedups over the previous stage and the baseline.
Later stages' gains depend on what came before (order matters, unlike
model/analysis/contributions.py's
leave-one-out view).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rooflens.hardware.errors import RooflensError
from rooflens.model.analysis.contributions import as_optimizations, ratio, summary
from rooflens.model.optimizations.base import Optimization
from rooflens.model.predict.api import make_pipeline
from rooflens.model.predict.scenario import Scenario

DEFAULT_STACK = ("no-kv-cache", "eager-attention", "unsplit-decode", "contiguous-kv")


def split_stack(items: Sequence[str]) -> list[str]:
    """`a,b:k=v,k2=v2,c` → ['a', 'b:k=v,k2=v2', 'c'].

    A comma-separated piece with '=' but no ':' continues the previous optimization's
    parameters; anything else starts a new optimization.
    """
    out: list[str] = []
    for item in items:
        for piece in filter(None, (p.strip() for p in item.split(","))):
            if "=" in piece and ":" not in piece:
                if not out:
                    raise RooflensError(f"--stack: '{piece}' needs an optimization name before it")
                out[-1] += "," + piece
            else:
                out.append(piece)
    return out


def switches_off(opt: Optimization) -> str:
    """What a switch-off optimization turns off ('' for an ordinary optimization)."""
    return str(getattr(opt, "switches_off", ""))


def waterfall(
    sc: Scenario,
    stack: Sequence[str | Optimization] = DEFAULT_STACK,
    common: Sequence[str | Optimization] = (),
) -> list[dict[str, Any]]:
    """Stages from the baseline to the full stack; `common` optimizations are in every stage."""
    opts = as_optimizations(stack)
    names = {
        id(o): s.strip() if isinstance(s, str) else o.label()
        for o, s in zip(opts, stack, strict=True)
    }
    base = as_optimizations(common)
    offs = [o for o in opts if switches_off(o)]
    ons = [o for o in opts if not switches_off(o)]
    in_force = list(offs)
    steps: list[tuple[str, str]] = [
        ("baseline", " + ".join(names[id(o)] for o in offs) or "the default stack")
    ]
    plan: list[list[Optimization]] = [list(in_force)]
    for o in offs:
        in_force = [x for x in in_force if x is not o]
        steps.append((f"+ {switches_off(o)}", f"drops {names[id(o)]}"))
        plan.append(list(in_force))
    for o in ons:
        in_force = [*in_force, o]
        steps.append((f"+ {names[id(o)]}", o.summary))
        plan.append(list(in_force))
    stages: list[dict[str, Any]] = []
    for (label, detail), stage_opts in zip(steps, plan, strict=True):
        together = [*base, *stage_opts]
        try:
            pred = make_pipeline(sc, together).predict()
            row = summary(sc, together, pred)
        except RooflensError as exc:
            raise RooflensError(f"compare: stage '{label}' failed: {exc}") from None
        row = {"stage": label, "detail": detail, "opts": [o.label() for o in together], **row}
        _speedups(row, stages[-1] if stages else None, stages[0] if stages else None)
        stages.append(row)
    return stages


def _speedups(
    row: dict[str, Any], previous: dict[str, Any] | None, first: dict[str, Any] | None
) -> None:
    tput = "max_batch_output_tokens_per_s"
    for key, ref in (("previous", previous), ("baseline", first)):
        ref = ref or row
        row[f"tpot_speedup_vs_{key}"] = ratio(ref["tpot_s"], row["tpot_s"])
        row[f"ttft_speedup_vs_{key}"] = ratio(ref["ttft_s"], row["ttft_s"])
        row[f"throughput_gain_vs_{key}"] = ratio(
            row["output_tokens_per_s"], ref["output_tokens_per_s"]
        )
        row[f"max_batch_throughput_gain_vs_{key}"] = ratio(row[tput], ref[tput])
