"""The `rooflens` command: arguments -> model/ (and validate/) -> tables, JSON, CSV.

Thin by design (DESIGN.md): no formulas here. Every failure the user can fix is a RooflensError,
printed as one line on stderr with exit status 2 (3 when the model does not fit in memory). So
are a bad argument (argtypes.py), an OSError (a file that cannot be read or written) and a
ValueError from a library. Anything else is a bug: one line says so and where to report it, and
`--debug` (anywhere on the line) shows the traceback.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from argtypes import count, non_negative, non_negative_number
from cli.args import EXIT_DOES_NOT_FIT, OneLineParser, one_line, show_warning
from cli.plan import add_plan_parser
from hardware.errors import RooflensError
from hardware.presets import get_gpu
from model.api import make_pipeline, make_scenario
from model.dtypes import ACTIVATION_DTYPES, STORAGE_DTYPES
from model.io import to_json
from model.units import fmt_bytes, fmt_flops, fmt_time

console = Console(width=140)


# ---------------------------------------------------------------- shared arguments
def add_scenario_args(p: argparse.ArgumentParser, memory_only: bool = False) -> None:
    p.add_argument("--model", required=True, help="preset id, spec file or HF config.json")
    p.add_argument("--gpu", required=True, help="GPU or system preset id, or a JSON/YAML spec")
    p.add_argument("--batch", type=count, default=1, help="concurrent sequences (default 1)")
    if memory_only:
        p.add_argument("--context", type=count, default=2048, help="tokens held per sequence")
    else:
        p.add_argument("--prompt-len", type=count, default=512, help="prompt tokens (default 512)")
        p.add_argument("--output-len", type=count, default=128, help="output tokens (default 128)")
        p.add_argument(
            "--images",
            type=count,
            default=0,
            help="images per prompt (vision-language models): their tokens join the prompt",
        )
        p.add_argument(
            "--act-dtype",
            default=None,
            choices=ACTIVATION_DTYPES,
            help="default: fp8 with fp8 weights on GPUs with fp8 units, else bf16",
        )
        p.add_argument("--profile", default="ideal", choices=("ideal", "calibrated"))
    p.add_argument(
        "--weight-dtype",
        default=None,
        choices=STORAGE_DTYPES,
        help="default: the model's native dtype (bf16; fp8 for DeepSeek-V3)",
    )
    p.add_argument("--kv-dtype", default=None, choices=STORAGE_DTYPES, help="default: activations")
    p.add_argument("--group-size", type=count, default=128, help="quantization group (default 128)")
    p.add_argument("--tp", type=count, default=1, help="tensor-parallel GPUs (default 1)")
    p.add_argument("--pp", type=count, default=1, help="pipeline-parallel stages (default 1)")
    p.add_argument("--ep", type=count, default=1, help="expert-parallel degree (default 1)")
    p.add_argument(
        "--opt",
        action="append",
        default=[],
        metavar="NAME[:k=v,...]",
        help="an optimization (repeatable); see `rooflens list optimizations`",
    )
    p.add_argument(
        "--overhead-gb", type=non_negative_number, default=None, help="runtime overhead, GB"
    )
    p.add_argument(
        "--prefill-chunk",
        type=non_negative,
        default=8192,
        help="tokens prefilled at once; sizes activation memory (default 8192, 0 = no chunking)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def scenario_from_args(args: argparse.Namespace, memory_only: bool = False) -> Any:
    extra: dict[str, Any] = {"prefill_chunk_tokens": args.prefill_chunk}
    if args.overhead_gb is not None:
        extra["overhead_bytes"] = args.overhead_gb * 1e9
    if memory_only:
        extra.update(prompt_len=args.context, output_len=1)
    else:
        extra.update(
            prompt_len=args.prompt_len,
            output_len=args.output_len,
            images=args.images,
            act_dtype=args.act_dtype,
            profile=args.profile,
        )
    return make_scenario(
        args.model,
        args.gpu,
        batch=args.batch,
        weight_dtype=args.weight_dtype,
        kv_dtype=args.kv_dtype,
        group_size=args.group_size,
        tp=args.tp,
        pp=args.pp,
        ep=args.ep,
        **extra,
    )


def _weights_text(sc: Any) -> str:
    """The weight dtype, with the routed experts' where it differs (gpt-oss: mxfp4)."""
    p = sc.precision
    experts = f" (experts {p.expert_dtype})" if p.expert_dtype != p.weight_dtype else ""
    return p.weight_dtype + experts


def print_json(data: Any) -> None:
    print(to_json(data))


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> Group:
    """A titled, aligned table; the title sits on its own line so it never wraps to the table."""
    t = Table(header_style="bold")
    for i, column in enumerate(columns):
        t.add_column(column, justify="left" if i == 0 else "right")
    for row in rows:
        t.add_row(*row)
    return Group(Text(title, style="bold"), t)


# ---------------------------------------------------------------- list
def cmd_list(args: argparse.Namespace) -> int:
    from model.catalog import catalog

    listing = catalog(args.what)
    if args.json:
        print_json(listing.rows)
    else:
        console.print(table(listing.title, listing.columns, listing.cells))
    return 0


# ---------------------------------------------------------------- memory
def cmd_memory(args: argparse.Namespace) -> int:
    sc = scenario_from_args(args, memory_only=True)
    pipeline = make_pipeline(sc, args.opt)
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
            [f"max batch at {args.context:,} tokens", f"{mem.max_batch:,} sequences"],
        ]
        title = (
            f"Memory per GPU: {sc.model.id} on {sc.gpu.id}, batch {args.batch}, "
            f"context {args.context:,}, weights {_weights_text(sc)}, "
            f"KV {sc.precision.kv_dtype}, TP {sc.parallel.tp}"
        )
        console.print(table(title, ["", "bytes"], rows))
    if not mem.fits:
        _complain_does_not_fit(sc, mem, args.opt)
        return EXIT_DOES_NOT_FIT
    return 0


def _complain_does_not_fit(sc: Any, mem: Any, opts: list[str]) -> None:
    from model.advice import fit_advice

    def fits(candidate: Any) -> bool:
        return bool(make_pipeline(candidate, opts).memory().fits)

    print(f"error: {fit_advice(sc, mem, fits)}", file=sys.stderr)


# ---------------------------------------------------------------- predict
def cmd_predict(args: argparse.Namespace) -> int:
    sc = scenario_from_args(args)
    pipeline = make_pipeline(sc, args.opt)
    pred = pipeline.predict()
    if not pred.memory.fits and not args.ignore_memory:
        _complain_does_not_fit(pipeline.scenario, pred.memory, args.opt)
        return EXIT_DOES_NOT_FIT
    from model.contributions import contributions

    effects = contributions(sc, args.opt, pred)
    from model.energy import energy

    power = energy(pred, args.usd_per_kwh)
    if args.json:
        print_json({**pred.to_dict(), "contributions": effects, "energy": power.to_dict()})
        return 0
    w, m = sc.workload, pred.memory
    title = (
        f"{sc.model.id} on {sc.gpu.id} ({args.profile}): batch {w.batch}, prompt {w.prompt_len}"
        + (f" (with {w.images_per_prompt} image(s))" if w.images_per_prompt else "")
        + ", "
        f"output {w.output_len}, weights {_weights_text(sc)}, KV {sc.precision.kv_dtype}, "
        f"TP {sc.parallel.tp}" + (f", opts {', '.join(args.opt)}" if args.opt else "")
    )
    headline = [
        ["TTFT (prefill)", fmt_time(pred.ttft_s), pred.prefill.bound + "-bound"],
        ["TPOT (mean decode step)", fmt_time(pred.tpot_s), pred.decode.bound + "-bound"]
        if w.output_len > 1
        else ["TPOT (mean decode step)", "n/a", "one output token: no decode step"],
        ["end-to-end", fmt_time(pred.e2e_s),
         f"{fmt_time(pred.e2e_per_output_token_s)}/token incl."],
        ["output throughput", f"{pred.output_tokens_per_s:,.0f} tokens/s", f"batch {w.batch}"],
        ["memory per GPU", f"{fmt_bytes(m.total_bytes)} of {fmt_bytes(m.capacity_bytes)}",
         f"max batch {m.max_batch:,}"],
        ["energy per output token", f"{power.joules_per_output_token:,.3g} J/token",
         f"{power.output_tokens_per_joule:,.3g} tokens/J"],
        ["GPU board power", f"{power.prefill_power_w:,.0f} W prefill, "
         f"{power.decode_power_w:,.0f} W decode", f"per GPU; idle {power.idle_w:,.0f} W, "
         f"TDP {power.tdp_w:,.0f} W"],
    ]  # fmt: skip
    if power.electricity_usd_per_million_tokens is not None:
        headline.append(["electricity", f"${power.electricity_usd_per_million_tokens:,.3g}/Mtok",
                         f"at ${args.usd_per_kwh:g}/kWh"])  # fmt: skip
    console.print(table(title, ["metric", "value", "note"], headline))
    if effects:
        console.print(_contributions_table(effects))
    if not args.no_ops:
        frame = pred.ops_frame()
        for phase, phase_time in (("prefill", pred.ttft_s), ("decode", pred.tpot_s)):
            sub = frame[frame["phase"] == phase]
            console.print(_ops_table(sub, phase, phase_time))
    for note in pred.notes:
        console.print(f"note: {note}")
    return 0


def _ops_table(frame: pd.DataFrame, phase: str, phase_time: float) -> Group:
    label = "one prefill step" if phase == "prefill" else "mean decode step"
    rows = []
    for r in frame.itertuples():
        share = r.time_s / phase_time * 100 if phase_time else 0.0
        intensity = "—" if pd.isna(r.intensity) else f"{r.intensity:,.1f}"
        rows.append([r.name, str(r.count), fmt_flops(r.flops), fmt_bytes(r.bytes), intensity,
                     fmt_time(r.time_s), f"{share:.1f} %", r.bound])  # fmt: skip
    return table(
        f"Operators, {label} (totals over count)",
        ["operator", "count", "FLOPs", "bytes", "FLOP/byte", "time", "share", "bound"],
        rows,
    )


def _times(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}×"


def _contributions_table(effects: list[dict[str, Any]]) -> Group:
    rows = []
    for e in effects:
        if "error" in e:
            rows.append([e["label"], "—", "—", "—", "—", e["error"]])
            continue
        mb = e["max_batch"]
        rows.append([e["label"], _times(e["ttft_s"]["speedup"]), _times(e["tpot_s"]["speedup"]),
                     fmt_bytes(e["memory_bytes"]["saved_bytes"]),
                     f"{mb['without']:,} → {mb['with']:,}",
                     _times(e["max_batch_output_tokens_per_s"]["gain"])])  # fmt: skip
    return table(
        "What each optimization buys (against the same stack without it)",
        ["optimization", "TTFT speedup", "TPOT speedup", "memory saved", "max batch",
         "tokens/s at max batch"],
        rows,
    )  # fmt: skip


# ---------------------------------------------------------------- compare
def cmd_compare(args: argparse.Namespace) -> int:
    from model.waterfall import DEFAULT_STACK, split_stack, waterfall

    sc = scenario_from_args(args)
    stack = split_stack(args.stack) if args.stack else list(DEFAULT_STACK)
    stages = waterfall(sc, stack, args.opt)
    if args.json:
        print_json(stages)
        return 0
    w = sc.workload
    rows = [
        [s["stage"], fmt_time(s["ttft_s"]), fmt_time(s["tpot_s"]),
         f"{s['output_tokens_per_s']:,.0f} tokens/s", fmt_bytes(s["memory_bytes"])
         + ("" if s["fits"] else " (over)"), f"{s['max_batch']:,}",
         "—" if s["max_batch_output_tokens_per_s"] is None
         else f"{s['max_batch_output_tokens_per_s']:,.0f} tokens/s",
         _times(s["tpot_speedup_vs_previous"]), _times(s["max_batch_throughput_gain_vs_baseline"])]
        for s in stages
    ]  # fmt: skip
    title = (
        f"From naive to full stack: {sc.model.id} on {sc.gpu.id} ({args.profile}), batch "
        f"{w.batch}, prompt {w.prompt_len}, output {w.output_len}"
        + (f", common opts {', '.join(args.opt)}" if args.opt else "")
    )
    console.print(table(title, ["stage", "TTFT", "TPOT", f"throughput @{w.batch}", "memory",
                                "max batch", "throughput @max", "TPOT vs prev",
                                "@max vs baseline"], rows))  # fmt: skip
    for s in stages[1:]:
        console.print(f"{s['stage']}: {s['detail']}")
    return 0


# ---------------------------------------------------------------- kernels predict
def cmd_kernels_predict(args: argparse.Namespace) -> int:
    from model.io import atomic_write_csv, check_writable
    from model.kernel_predict import predict_kernels

    if args.output:
        check_writable(args.output)
    path = Path(args.input)
    if not path.is_file():
        raise RooflensError(f"input file not found: {path}")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise RooflensError(f"cannot read {path} as CSV: {str(exc).splitlines()[0]}") from None
    result = predict_kernels(frame, get_gpu(args.gpu), args.profile)
    if args.output:
        atomic_write_csv(args.output, result)
        print(f"wrote {len(result)} predictions to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(result.to_csv(index=False))
    return 0


# ---------------------------------------------------------------- parser and main
def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="rooflens",
        description="Predict LLM inference on GPUs: memory, TTFT, TPOT, throughput, per-operator "
        "roofline, optimizations and capacity plans.",
    )
    parser.add_argument(
        "--debug", action="store_true", help="show an internal error's traceback (anywhere)"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="list presets and optimizations")
    p.add_argument("what", choices=("models", "gpus", "systems", "optimizations"))
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_list)

    p = sub.add_parser("memory", help="memory per GPU: weights, KV cache, activations, max batch")
    add_scenario_args(p, memory_only=True)
    p.set_defaults(handler=cmd_memory)

    p = sub.add_parser("predict", help="TTFT, TPOT, throughput and the per-operator roofline")
    add_scenario_args(p)
    p.add_argument("--no-ops", action="store_true", help="headline only, no operator tables")
    p.add_argument("--ignore-memory", action="store_true", help="predict even if it does not fit")
    p.add_argument(
        "--usd-per-kwh",
        type=float,
        default=0.0,
        help="electricity tariff, $/kWh: adds the energy part of $/Mtok (default: none)",
    )
    p.set_defaults(handler=cmd_predict)

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

    p = sub.add_parser("kernels", help="single-kernel predictions (CSV contract of DESIGN.md)")
    ksub = p.add_subparsers(dest="kernels_command", required=True)
    kp = ksub.add_parser("predict", help="add flops, bytes, predicted_s, bound to a kernel CSV")
    kp.add_argument("input", help="CSV with an 'op' column: gemm, attention_prefill/decode "
                    "(also moe, mla_prefill/decode, norm, elementwise, embedding, comm: the "
                    "calls of predict --json's ops rows; model/kernel_predict.py)")  # fmt: skip
    kp.add_argument("--gpu", required=True)
    kp.add_argument("--profile", default="ideal", choices=("ideal", "calibrated"))
    kp.add_argument("-o", "--output", help="write CSV here (atomically) instead of stdout")
    kp.set_defaults(handler=cmd_kernels_predict)

    add_plan_parser(sub)
    from validate.commands import add_validate_parsers  # validate {run,compare,report}, calibrate

    add_validate_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in words
    args = build_parser().parse_args([w for w in words if w != "--debug"])
    try:
        with warnings.catch_warnings():
            warnings.showwarning = show_warning  # a library's warning: one line on stderr
            return int(args.handler(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if debug:
            raise
        return one_line(exc)


if __name__ == "__main__":
    sys.exit(main())
