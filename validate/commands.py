"""`rooflens validate {run,compare,report}` and `rooflens calibrate {fit,cpu}`: argument
parsing and printing only; the work is in the other validate/ modules. cli.py registers these
with `add_validate_parsers(sub)`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

from hardware.errors import RooflensError
from validate.datasets import DEFAULT_ROOT

console = Console(width=200)
PROFILES = ("ideal", "calibrated")


def _table(title: str, frame: pd.DataFrame, percent: Sequence[str] = ()) -> Table:
    t = Table(title=title, title_justify="left", header_style="bold")
    for i, column in enumerate(frame.columns):
        t.add_column(str(column), justify="left" if i == 0 else "right")
    for row in frame.itertuples(index=False):
        cells = []
        for column, value in zip(frame.columns, row, strict=True):
            if column in percent:
                cells.append("—" if pd.isna(value) else f"{100 * float(value):.1f} %")
            elif isinstance(value, float):
                cells.append(f"{value:.4g}")
            else:
                cells.append(str(value))
        t.add_row(*cells)
    return t


ERROR_COLUMNS = ("ideal_median", "ideal_p90", "calibrated_median", "calibrated_p90",
                 "calibrated_bias", "ideal_under_share")  # fmt: skip


SHORT_NAMES = {"excluded_cache": "cache effects", "ideal_under_share": "ideal under",
               "ideal_median": "ideal med", "ideal_p90": "ideal p90",
               "calibrated_median": "calib med", "calibrated_p90": "calib p90",
               "calibrated_bias": "calib bias"}  # fmt: skip


def print_summary(summary: pd.DataFrame, title: str) -> None:
    percent = [SHORT_NAMES.get(c, c) for c in ERROR_COLUMNS]
    console.print(_table(title, summary.rename(columns=SHORT_NAMES), percent=percent))


# ---------------------------------------------------------------- validate run
def cmd_run(args: argparse.Namespace) -> int:
    from validate.compare import band_check, join
    from validate.runner import run_suite
    from validate.store import device_provenance, run_name, write_results

    if args.device == "cpu":
        import torch

        from validate.cpu import load_cpu_spec, measure_cpu, save_cpu_spec, spec_path
        from validate.suite import cpu_suite

        root = Path(args.results)
        if not spec_path(root).is_file():
            console.print("no CPU spec yet: measuring this machine (`rooflens calibrate cpu`)")
            save_cpu_spec(measure_cpu(args.threads, quick=args.quick), root)
        spec = load_cpu_spec(root)
        torch.set_num_threads(args.threads)
        suite, device_id, gpu_ref = cpu_suite(), "cpu", str(spec_path(root))
        cache_bytes, profiles = min(spec.l2_bytes, 64e6), ("ideal",)
    else:
        import torch

        from hardware.presets import get_gpu
        from validate.runner import gpu_preset_for
        from validate.suite import full_suite, gpu_quick_suite

        if not torch.cuda.is_available():
            raise RooflensError("no CUDA GPU found: use --device cpu, or run on a GPU machine")
        device_id = args.gpu or gpu_preset_for(torch.cuda.get_device_name())
        gpu_ref, cache_bytes = device_id, get_gpu(device_id).l2_bytes
        suite, profiles = gpu_quick_suite() if args.quick else full_suite(), PROFILES
    if args.kernels:
        suite = suite[suite["kernel"].isin(args.kernels.split(","))]
    if args.limit:
        suite = suite.head(args.limit)
    impls = tuple(args.impl.split(","))
    progress = None if args.json else console.print
    results = run_suite(suite, "cpu" if args.device == "cpu" else "cuda", impls, cache_bytes,
                        progress=progress, quick=args.quick)  # fmt: skip
    results["gpu"] = gpu_ref
    provenance = device_provenance(args.device)
    path = write_results(results, device_id, run_name("quick" if args.quick else "full"),
                         provenance, Path(args.results))  # fmt: skip
    joined = join(results, profiles)
    ok, stats = band_check(joined)
    if args.json:
        print(json.dumps({"results": str(path), "band": stats, "ok": ok}, indent=2))
    else:
        _print_rows(joined, profiles)
        console.print(f"wrote {len(results)} rows to {path}")
        console.print(f"measured / ideal: median {stats['median_ratio']:.2f}x, "
                      f"min {stats['min_ratio']:.2f}x, max {stats['max_ratio']:.2f}x")  # fmt: skip
    if args.check and not ok:
        print("error: measured/predicted outside the band (median in 0.5-5x, none < 0.3x)",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


def _print_rows(joined: pd.DataFrame, profiles: Sequence[str]) -> None:
    from validate.runner import _describe

    frame = pd.DataFrame({"op": joined["op"], "shape": joined.apply(_describe, axis=1),
                          "impl": joined["impl"]})  # fmt: skip
    frame["measured (us)"] = joined["measured_s"] * 1e6
    for p in profiles:
        frame[f"{p} (us)"] = joined[f"predicted_{p}_s"] * 1e6
        frame[f"{p} error"] = joined[f"error_{p}"]
    console.print(_table("Measured vs predicted", frame, [f"{p} error" for p in profiles]))


# ---------------------------------------------------------------- validate compare / report
def _measurements(args: argparse.Namespace) -> tuple[pd.DataFrame, tuple[str, ...]]:
    from validate.datasets import load_kernels
    from validate.store import load_results

    if args.device:
        frame = load_results(args.device, Path(args.results))
        if frame.empty:
            raise RooflensError(
                f"no results stored for device '{args.device}' under {args.results}"
            )
        return frame, ("ideal",) if args.device == "cpu" else PROFILES
    return load_kernels(Path(args.measured)), PROFILES


def cmd_compare(args: argparse.Namespace) -> int:
    from validate.compare import join, summarize
    from validate.frontier import best_of_impls

    measured, profiles = _measurements(args)
    if args.frontier:  # attention as the calibrated profile describes it: the fastest impl
        measured, _ = best_of_impls(measured)
    summary = summarize(join(measured, profiles), tuple(args.by.split(",")), profiles, True)
    if args.json:
        print(summary.to_json(orient="records", indent=2))
    else:
        print_summary(summary, "Kernel error |predicted/measured − 1| (rows faster than the "
                      "roofline excluded and counted as cache effects)")  # fmt: skip
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from validate.compare import join, summarize
    from validate.report import write_report

    measured, profiles = _measurements(args)
    joined = join(measured, profiles)
    summary = summarize(joined, ("gpu", "op"), profiles, subsets=True)
    path = write_report(joined, summary, Path(args.output), profiles)
    print_summary(summary, "Kernel error by GPU and operator class")
    console.print(f"wrote {path}")
    return 0


# ---------------------------------------------------------------- calibrate
def cmd_fit(args: argparse.Namespace) -> int:
    from hardware.profiles import CALIBRATION_DIR
    from validate.calibrate import fit_all
    from validate.datasets import load_kernels
    from validate.store import load_results

    tables = [load_kernels(Path(args.measured))]
    for device in args.results_device or []:
        tables.append(load_results(device, Path(args.results)))
    written = fit_all(pd.concat(tables, ignore_index=True), Path(args.out or CALIBRATION_DIR))
    for name, path in written.items():
        console.print(f"{name}: wrote {path}")
    return 0


def cmd_cpu(args: argparse.Namespace) -> int:
    from validate.cpu import measure_cpu, save_cpu_spec

    spec = measure_cpu(args.threads, quick=args.quick)
    path = save_cpu_spec(spec, Path(args.results))
    console.print(f"{spec.name}: memory {spec.hbm_bytes_per_s / 1e9:.1f} GB/s, fp32 matmul "
                  f"{spec.peak_flops_per_s['fp32'] / 1e9:.1f} GFLOP/s; wrote {path}")  # fmt: skip
    return 0


def add_validate_parsers(sub: argparse._SubParsersAction) -> None:
    """Register `validate` and `calibrate` on the CLI's subcommand parser."""
    from validate.store import RESULTS_DIR

    p = sub.add_parser("validate", help="measure kernels, compare with predictions, report")
    vsub = p.add_subparsers(dest="validate_command", required=True)
    run = vsub.add_parser("run", help="time the suite on this GPU (or CPU) and store results")
    run.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    run.add_argument("--gpu", help="GPU preset id (default: from the CUDA device name)")
    run.add_argument("--quick", action="store_true", help="a short suite (about a minute)")
    run.add_argument("--kernels", help="comma-separated kernels of kernels/ (default: all)")
    run.add_argument("--impl", default="triton,torch", help="triton, torch or both")
    run.add_argument("--limit", type=int, default=0, help="first N suite rows only")
    run.add_argument("--threads", type=int, default=1, help="CPU threads (default 1)")
    run.add_argument("--check", action="store_true", help="exit 1 outside the accuracy band")
    run.add_argument("--json", action="store_true")
    run.add_argument("--results", default=str(RESULTS_DIR), help="results store folder")
    run.set_defaults(handler=cmd_run)
    for name, handler, text in (
        ("compare", cmd_compare, "error statistics by GPU and op"),
        ("report", cmd_report, "HTML figures and the error table"),
    ):
        q = vsub.add_parser(name, help=text)
        q.add_argument("--device", help="stored results of this device (default: shared data)")
        q.add_argument("--measured", default=str(DEFAULT_ROOT), help="shared measurement folder")
        q.add_argument("--results", default=str(RESULTS_DIR), help="results store folder")
        if name == "compare":
            q.add_argument("--by", default="gpu,op", help="group columns (e.g. gpu,op,impl)")
            q.add_argument("--frontier", action="store_true",
                           help="attention rows: per shape, the fastest implementation (what "
                           "the calibrated attention terms are fitted to)")  # fmt: skip
            q.add_argument("--json", action="store_true")
        else:
            q.add_argument("-o", "--output", default="artifacts/validation",
                           help="folder for report.html and summary.csv")  # fmt: skip
        q.set_defaults(handler=handler)
    from validate.e2e.cli import add_e2e_parser  # `validate e2e`: the whole model (issue 12)

    add_e2e_parser(vsub)

    p = sub.add_parser("calibrate", help="fit calibration profiles; measure this CPU")
    csub = p.add_subparsers(dest="calibrate_command", required=True)
    fit = csub.add_parser("fit", help="fit hardware/calibration/*.yaml from measurements")
    fit.add_argument("--measured", default=str(DEFAULT_ROOT), help="shared measurement folder")
    fit.add_argument("--results-device", action="append", help="also fit this device's runs")
    fit.add_argument("--results", default=str(RESULTS_DIR), help="results store folder")
    fit.add_argument("--out", help="output folder (default hardware/calibration)")
    fit.set_defaults(handler=cmd_fit)
    cpu = csub.add_parser("cpu", help="measure this CPU's bandwidth and matmul peak into a spec")
    cpu.add_argument("--threads", type=int, default=1, help="threads to measure with (default 1)")
    cpu.add_argument("--quick", action="store_true", help="shorter measurement")
    cpu.add_argument("--results", default=str(RESULTS_DIR), help="results store folder")
    cpu.set_defaults(handler=cmd_cpu)
