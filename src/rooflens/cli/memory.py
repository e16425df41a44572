"""`rooflens memory`: memory per GPU (weights, KV cache, activations, overhead) and the largest
batch that fits; exit 3, with advice on stderr, when the model does not fit. `predict` reuses
`complain_does_not_fit`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from rooflens.cli.args import EXIT_DOES_NOT_FIT
from rooflens.cli.render import console, print_json, table, weights_text
from rooflens.cli.scenario_args import add_scenario_args, scenario_from_args
from rooflens.io.units import fmt_bytes
from rooflens.model.predict.api import make_pipeline
from rooflens.model.predict.request import ScenarioRequest, flag


def add_parser(sub: Any) -> None:
    p = sub.add_parser("memory", help="memory per GPU: weights, KV cache, activations, max batch")
    add_scenario_args(p, memory_only=True)
    p.set_defaults(handler=cmd_memory)


def cmd_memory(args: argparse.Namespace) -> int:
    sc = scenario_from_args(args, memory_only=True)
    pipeline = make_pipeline(sc)  # the optimizations the scenario was built with
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
    """Say on stderr what would make the scenario fit (model/analysis/advice.py finds it)."""

    def fits(candidate: Any) -> bool:
        return bool(make_pipeline(candidate, opts).memory().fits)

    print(f"error: {fit_advice(sc, mem, fits)}", file=sys.stderr)


def fit_advice(sc: Any, mem: Any, fits: Callable[[Any], bool]) -> str:
    """The CLI's one line: 'needs X, Y over capacity Z: try --weight-dtype fp8, or --tp 2' (each
    change named by its flag in the schema, model/predict/request.py)."""
    from rooflens.model.analysis.advice import FIT_TP, fit_fixes

    advice = fit_fixes(sc, mem, fits)
    head = (
        f"{sc.model.id} needs {fmt_bytes(advice.total_bytes)} per GPU on {sc.gpu.id} "
        f"(capacity {fmt_bytes(advice.capacity_bytes)}, {fmt_bytes(advice.over_bytes)} over)"
    )
    if not advice.fixes:
        return head + f"; nothing up to --tp {FIT_TP[-1]} with W4A16 weights fits: add --pp"
    texts = [
        " ".join(f"{flag(ScenarioRequest, k)} {v}" for k, v in fix.changes.items())
        + (" or less" if fix.at_most else "")
        for fix in advice.fixes
    ]
    joined = " with ".join(texts) if advice.combined else ", or ".join(texts)
    return f"{head}; try {joined}" + (" (no single change fits)" if advice.combined else "")
