"""`rooflens compare`: the waterfall from a naive baseline to the full optimization stack, one
row per stage (model/analysis/waterfall.py computes the stages)."""

from __future__ import annotations

import argparse
from typing import Any

from rooflens.cli.render import console, print_json, table, times
from rooflens.cli.scenario_args import add_scenario_args, scenario_from_args
from rooflens.io.units import fmt_bytes, fmt_time
from rooflens.model.predict.scenario import priced_by


def add_parser(sub: Any) -> None:
    p = sub.add_parser("compare", help="waterfall from a naive baseline to the full stack")
    add_scenario_args(p)
    p.add_argument(
        "--stack",
        action="append",
        default=[],
        metavar="NAME[:k=v,...],...",
        help="optimizations in the order added; switch-offs (no-kv-cache, eager-attention, "
        "unsplit-decode, contiguous-kv) form the baseline (default: all four, then the rest)",
    )
    p.set_defaults(handler=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from rooflens.model.analysis.waterfall import DEFAULT_STACK, split_stack, waterfall

    sc = scenario_from_args(args)
    stack = split_stack(args.stack) if args.stack else list(DEFAULT_STACK)
    stages = waterfall(sc, stack, args.opts)
    if args.json:
        print_json([{**s, "priced_by": priced_by(sc.profile, sc.engine, sc.gpu)} for s in stages])
        return 0
    w = sc.workload
    rows = [
        [s["stage"], fmt_time(s["ttft_s"]), fmt_time(s["tpot_s"]),
         f"{s['output_tokens_per_s']:,.0f} tokens/s", fmt_bytes(s["memory_bytes"])
         + ("" if s["fits"] else " (over)"), f"{s['max_batch']:,}",
         "—" if s["max_batch_output_tokens_per_s"] is None
         else f"{s['max_batch_output_tokens_per_s']:,.0f} tokens/s",
         times(s["tpot_speedup_vs_previous"]), times(s["max_batch_throughput_gain_vs_baseline"])]
        for s in stages
    ]  # fmt: skip
    title = (
        f"From naive to full stack: {sc.model.id} on {sc.gpu.id} "
        f"({priced_by(sc.profile, sc.engine, sc.gpu)}), batch "
        f"{w.batch}, prompt {w.prompt_len}, output {w.output_len}"
        + (f", common opts {', '.join(args.opts)}" if args.opts else "")
    )
    console.print(table(title, ["stage", "TTFT", "TPOT", f"throughput @{w.batch}", "memory",
                                "max batch", "throughput @max", "TPOT vs prev",
                                "@max vs baseline"], rows))  # fmt: skip
    for s in stages[1:]:
        console.print(f"{s['stage']}: {s['detail']}")
    return 0
