"""`rooflens plan`: its arguments and its handler (logic in model/planner, rendering in
cli/plan_report.py); cli/__init__.py adds the subcommand with `add_parser`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console

from rooflens.argtypes import finite_number, non_negative, positive, positive_number, whole
from rooflens.cli.args import EXIT_DOES_NOT_FIT
from rooflens.cli.render import LazyProgress, console


def add_parser(sub: Any) -> None:
    from rooflens.model.planner.explain import CHEAP_SWEEP_GROUPS
    from rooflens.model.planner.plan_args import MAX_SIM_REQUESTS
    from rooflens.model.planner.plan_lists import SCENARIO_OPTIONS, listed
    from rooflens.model.planner.space import SweepSpace
    from rooflens.model.predict.request import CHOICES, ScenarioRequest

    sim_requests = whole(0, MAX_SIM_REQUESTS, "fewer simulated requests keep memory under ~2 GB")
    p = sub.add_parser("plan", help="capacity plan: cheapest GPUs meeting a load and its SLOs")
    p.add_argument("--model", required=True, help="preset id or spec file")
    p.add_argument("--gpus", default="all", help="GPU ids, comma-separated, or 'all' (default)")
    p.add_argument(
        "--rate", type=positive_number, help="request arrival rate, requests/s (or --trace)"
    )
    p.add_argument(
        "--trace",
        metavar="FILE",
        help="JSONL of timestamp, input_len, output_len "
        "[, prefix_id, prefix_len], replayed in place of --rate and the lengths",
    )
    p.add_argument("--prompt-len", help="N (default 512), lognormal:mean=N,p99=M or file:PATH")
    p.add_argument(
        "--prompt-len-p99", type=positive_number, help="with --prompt-len N: lognormal p99"
    )
    p.add_argument("--output-len", help="N (default 128), lognormal:mean=N,p99=M or file:PATH")
    p.add_argument(
        "--output-len-p99", type=positive_number, help="with --output-len N: lognormal p99"
    )
    p.add_argument("--ttft-slo", type=positive_number, help="p99 time to first token target, s")
    p.add_argument("--tpot-slo", type=positive_number, help="p99 time per output token target, s")
    p.add_argument("--ttft-slo-mean", type=positive_number, help="mean TTFT target, s")
    p.add_argument("--tpot-slo-mean", type=positive_number, help="mean TPOT target, s")
    for option, (
        name,
        default,
    ) in SCENARIO_OPTIONS.items():  # described in model/predict/request.py
        what = ScenarioRequest.model_fields[name].description
        if option == "--profile":
            p.add_argument(option, default=default, choices=CHOICES[name],
                           help=f"{what} (default {default})")  # fmt: skip
        elif option == "--engine":  # a list, checked by plan_lists.engine_list
            p.add_argument(option, default=default, metavar="ENGINES",
                           help=f"{what}; comma-separated ({','.join(CHOICES[name])}) or "
                           f"all to search several, as --tp (default {default})")  # fmt: skip
        elif option == "--chunk":
            p.add_argument(option, type=positive, default=int(default),
                           help=f"chunked-prefill token budget (default {default})")  # fmt: skip
        else:
            p.add_argument(option, default=default,
                           help=f"{what}, comma-separated (default {default})")  # fmt: skip
    p.add_argument("--max-batch", help="batch caps to try (default 1..1024)")
    p.add_argument("--modes", default=listed("modes"), help="schedulers")
    max_gpus = SweepSpace.default("max_gpus")
    p.add_argument("--max-gpus", type=positive, default=max_gpus,
                   help=f"GPUs at most (default {max_gpus})")  # fmt: skip
    p.add_argument("--opt", action="append", default=[], metavar="NAME[:k=v,...]")
    p.add_argument("--sweep-opt", action="append", default=[], help="tried on and off")
    p.add_argument("--price", action="append", default=[], metavar="GPU=USD", help="per GPU-hour")
    p.add_argument("--prices", help="YAML/JSON file of GPU: USD per GPU-hour")
    p.add_argument("--serving-profile", metavar="FILE", help="validate serve --fit output")
    p.add_argument(
        "--prefix-hit-rate", type=finite_number, help="share of prompt tokens cached, 0-1"
    )
    p.add_argument("--kv-offload", default=SweepSpace.default("kv_offload"),
                   choices=("none", "host", "nvme"),
                   help="where the prefix cache lives below HBM (default none)")  # fmt: skip
    p.add_argument("--prefill-gpus", help="mixed pairs: GPUs for prefill replicas")
    p.add_argument("--decode-gpus", help="mixed pairs: GPUs for decode replicas")
    p.add_argument("--objective", default=SweepSpace.default("objective"),
                   choices=("cost", "goodput-per-dollar"),
                   help="recommend the cheapest, or the most goodput per dollar")  # fmt: skip
    p.add_argument(
        "--sim-requests",
        type=sim_requests,
        default=2000,
        help=f"0 = no simulation; at most {MAX_SIM_REQUESTS:,} (~2 GB)",
    )
    p.add_argument("--seed", type=non_negative, default=0)
    p.add_argument(
        "--explain-alternatives",
        action="store_true",
        help="when infeasible, also re-plan with more GPUs, other GPU types and a lower rate "
        f"(~14 re-sweeps; by default only when the first sweep priced at most "
        f"{CHEAP_SWEEP_GROUPS} groups)",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable output")
    out.add_argument("--md", action="store_true", help="markdown report on stdout")
    p.add_argument("--csv", metavar="FILE", help="write the kept configurations as CSV")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report")
    p.set_defaults(handler=cmd_plan)


def cmd_plan(args: argparse.Namespace) -> int:
    from rooflens.cli import plan_report as report
    from rooflens.io.files import atomic_write_csv, atomic_write_text, check_writable, to_json
    from rooflens.model.planner.plan import plan
    from rooflens.model.planner.plan_args import build_request

    for path, what in ((args.csv, "--csv"), (args.html, "--html")):
        if path is not None:  # '' too: it names no file
            check_writable(path, what)  # before the sweep, not after it

    trace = args.trace
    if trace is not None:  # read here, with a progress bar: millions of lines take seconds
        from rooflens.model.planner.trace import read_trace

        reading = LazyProgress(Console(stderr=True), "reading the trace")
        try:
            trace = read_trace(trace, progress=reading)
        finally:
            reading.close()
    space, workload = build_request(
        model=args.model, gpus=args.gpus, rate=args.rate, prompt_len=args.prompt_len,
        output_len=args.output_len, prompt_len_p99=args.prompt_len_p99,
        output_len_p99=args.output_len_p99, ttft_slo=args.ttft_slo, tpot_slo=args.tpot_slo,
        ttft_slo_mean=args.ttft_slo_mean, tpot_slo_mean=args.tpot_slo_mean, tp=args.tp,
        pp=args.pp, ep=args.ep, weight_dtypes=args.weight_dtypes, kv_dtypes=args.kv_dtypes,
        max_batch=args.max_batch, modes=args.modes, max_gpus=args.max_gpus, chunk=args.chunk,
        profile=args.profile, engine=args.engine, opts=args.opt, sweep_opts=args.sweep_opt,
        prices=args.price, price_file=args.prices,
        serving_profile=args.serving_profile, trace=trace, objective=args.objective,
        prefix_hit_rate=args.prefix_hit_rate, kv_offload=args.kv_offload,
        prefill_gpus=args.prefill_gpus, decode_gpus=args.decode_gpus,
    )  # fmt: skip
    err = Console(stderr=True)
    bar = LazyProgress(err, "sweeping configurations")
    try:
        result = plan(space, workload, simulate_requests=args.sim_requests, seed=args.seed,
                      progress=bar, alternatives=args.explain_alternatives or None)  # fmt: skip
    finally:
        bar.close()
    if args.csv is not None:
        atomic_write_csv(args.csv, report.csv_frame(result), "--csv")
    if args.html is not None:
        atomic_write_text(args.html, report.html(result), "--html")
    if args.json:
        print(to_json(result.to_dict()))
    elif args.md:
        sys.stdout.write(report.markdown(result))
    else:
        report.terminal(result, console)
    return 0 if result.recommended else EXIT_DOES_NOT_FIT
