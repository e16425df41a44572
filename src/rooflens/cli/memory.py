"""`rooflens memory`: memory per GPU (weights, KV cache, activations, overhead) and the largest
batch that fits; exit 3, with advice on stderr, when the model does not fit. `predict` reuses
`complain_does_not_fit`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rooflens.cli.args import EXIT_DOES_NOT_FIT
from rooflens.cli.render import console, print_json, table, weights_text
from rooflens.cli.scenario_args import add_scenario_args, scenario_from_args
from rooflens.model.predict.api import make_pipeline
from rooflens.model.units import fmt_bytes


def add_parser(sub: Any) -> None:
    p = sub.add_parser("memory", help="memory per GPU: weights, KV cache, activations, max batch")
    add_scenario_args(p, memory_only=True)
    p.set_defaults(handler=cmd_memory)


def cmd_memory(args: argparse.Namespace) -> int:
    sc = scenario_from_args(args, memory_only=True)
    pipeline = make_pipeline(sc, args.opts)
    mem = pipeline.memory()
    if args.json:
        print_json(mem.to_dict())
    else:
        rows = [
            ["weights", fmt_bytes(mem.weights_bytes)],
            ["KV cache", fmt_bytes(mem.kv_cache_bytes)],
            ["activations (peak)", fmt_bytes(mem.activation_bytes)],
            ["runtime overhead", fmt_bytes(mem.overhead_bytes)],
        ]
        if mem.extra_bytes:
            rows.append(["optimizations' extra", fmt_bytes(mem.extra_bytes)])
        rows += [
            ["total", fmt_bytes(mem.total_bytes)],
            ["capacity", fmt_bytes(mem.capacity_bytes)],
            ["fits", "yes" if mem.fits else "NO"],
            ["KV per token", fmt_bytes(mem.kv_bytes_per_token)],
            [f"max batch at {args.prompt_len:,} tokens", f"{mem.max_batch:,} sequences"],
        ]
        title = (
            f"Memory per GPU: {sc.model.id} on {sc.gpu.id}, batch {args.batch}, "
            f"context {args.prompt_len:,}, precision {weights_text(sc)}, "
            f"KV {sc.precision.kv_dtype}, TP {sc.parallel.tp}"
        )
        console.print(table(title, ["", "bytes"], rows))
    if not mem.fits:
        complain_does_not_fit(sc, mem, args.opts)
        return EXIT_DOES_NOT_FIT
    return 0


def complain_does_not_fit(sc: Any, mem: Any, opts: list[str]) -> None:
    """Say on stderr what would make the scenario fit (model/analysis/advice.py)."""
    from rooflens.model.analysis.advice import fit_advice

    def fits(candidate: Any) -> bool:
        return bool(make_pipeline(candidate, opts).memory().fits)

    print(f"error: {fit_advice(sc, mem, fits)}", file=sys.stderr)
