"""`rooflens validate {run,compare,report,cv}` and `rooflens calibrate {fit,cpu}`: argument
parsing and printing only; the work is in the other validate/ modules. cli/__init__.py
registers these with `add_validate_parsers(sub)`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

from argtypes import whole
from hardware.errors import RooflensError
from validate.datasets import DEFAULT_ROOT, training_table
from validate.e2e.cli import add_e2e_parser
from validate.serve_cli import add_serve_parser

console = Console(width=200)
PROFILES = ("ideal", "calibrated")
THREADS = whole(1, 4096)


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
    torch = _import_torch()  # before anything that needs it: say what to install
    from model.io import to_json
    from validate.compare import band_check, join
    from validate.runner import run_suite
    from validate.store import RunWriter, device_provenance

    if args.device == "cpu":
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
        from hardware.presets import get_gpu
        from validate.runner import gpu_preset_for
        from validate.suite import full_suite, gpu_quick_suite

        if not torch.cuda.is_available():
            raise RooflensError("no CUDA GPU found: use --device cpu, or run on a GPU machine")
        device_id = args.gpu or gpu_preset_for(torch.cuda.get_device_name())
        gpu_ref, cache_bytes = device_id, get_gpu(device_id).l2_bytes
        suite, profiles = gpu_quick_suite() if args.quick else full_suite(), PROFILES
    if args.kernels:
        wanted = [k.strip() for k in args.kernels.split(",")]
        unknown = sorted(set(wanted) - set(suite["kernel"]))
        if unknown:
            known = ", ".join(sorted(set(suite["kernel"])))
            raise RooflensError(f"--kernels: no kernel '{unknown[0]}' in this suite; use {known}")
        suite = suite[suite["kernel"].isin(wanted)]
    if args.limit:
        suite = suite.head(args.limit)
    impls = tuple(i.strip() for i in args.impl.split(","))
    if not impls or not set(impls) <= {"triton", "torch"}:
        raise RooflensError(f"--impl {args.impl}: use triton, torch or triton,torch")
    progress = None if args.json else console.print
    writer = RunWriter(device_id, "quick" if args.quick else "full",
                       device_provenance(args.device), Path(args.results), gpu_ref,
                       fresh=args.fresh)  # fmt: skip
    if writer.resumed and progress:
        progress(f"resuming {writer.path}: {writer.resumed} rows already measured (--fresh to "
                 "start over)")  # fmt: skip
    try:
        run_suite(suite, "cpu" if args.device == "cpu" else "cuda", impls, cache_bytes,
                  progress=progress, quick=args.quick, skip=writer.done,
                  sink=writer.append)  # fmt: skip
    except KeyboardInterrupt:
        print(f"interrupted: {len(writer.rows)} measured rows kept in {writer.path}; run the "
              "same command again to resume", file=sys.stderr)  # fmt: skip
        raise
    results = writer.frame()
    path = writer.finish()
    joined = join(results, profiles)
    ok, stats = band_check(joined)
    if args.json:
        print(to_json({"results": str(path), "band": stats, "ok": ok}))
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
    if "eager_s" in joined:  # launch-inclusive eager time: host overhead made visible
        frame["eager (us)"] = joined["eager_s"] * 1e6
    for p in profiles:
        frame[f"{p} (us)"] = joined[f"predicted_{p}_s"] * 1e6
        frame[f"{p} error"] = joined[f"error_{p}"]
    console.print(_table("Measured vs predicted", frame, [f"{p} error" for p in profiles]))


def _import_torch():  # type: ignore[no-untyped-def]
    """torch, or a one-line error saying what to install (it is an optional dependency)."""
    try:
        import torch
    except ImportError:
        raise RooflensError(
            "validate run needs torch (and triton on a GPU): pip install 'rooflens[validate]' "
            "(on a GPU machine, the CUDA build of torch first; see README)"
        ) from None
    return torch


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


# ---------------------------------------------------------------- validate compare / report
def _measurements(args: argparse.Namespace) -> tuple[pd.DataFrame, tuple[str, ...]]:
    from validate.datasets import load_kernels
    from validate.store import load_results

    if args.device:
        frame = load_results(args.device, Path(args.results), on_skip=_warn)
        if frame.empty:
            raise RooflensError(
                f"no results stored for device '{args.device}' under {args.results}"
            )
        return frame, ("ideal",) if args.device == "cpu" else PROFILES
    frame = load_kernels(Path(args.measured))
    if frame.empty:
        raise RooflensError(
            f"no measurements found under {args.measured} (pass --measured DIR, or --device)"
        )
    return frame, PROFILES


def cmd_compare(args: argparse.Namespace) -> int:
    from validate.compare import join, summarize
    from validate.frontier import best_of_impls

    measured, profiles = _measurements(args)
    if args.frontier:  # attention as the calibrated profile describes it: the fastest impl
        measured, _ = best_of_impls(measured)
    joined = join(measured, profiles)
    by = tuple(c.strip() for c in args.by.split(","))
    bad = [c for c in by if c not in joined.columns]
    if bad or not by:
        known = ", ".join(c for c in ("gpu", "op", "impl", "dtype", "kernel", "source", "model")
                          if c in joined.columns)  # fmt: skip
        raise RooflensError(f"--by: no column '{bad[0] if bad else ''}' to group by; use {known}")
    summary = summarize(joined, by, profiles, True)
    if args.json:
        print(summary.to_json(orient="records", indent=2))
    else:
        print_summary(summary, "Kernel error |predicted/measured − 1| (rows faster than the "
                      "roofline excluded and counted as cache effects)")  # fmt: skip
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from model.io import check_writable
    from validate.compare import join, summarize
    from validate.report import write_report

    check_writable(Path(args.output) / "report.html", "-o folder's report")
    measured, profiles = _measurements(args)
    joined = join(measured, profiles)
    summary = summarize(joined, ("gpu", "op"), profiles, subsets=True)
    path = write_report(joined, summary, Path(args.output), profiles)
    print_summary(summary, "Kernel error by GPU and operator class")
    console.print(f"wrote {path}")
    return 0


def _training_table(args: argparse.Namespace) -> pd.DataFrame:
    return training_table(Path(args.measured), Path(args.results), args.results_device or [])


# ---------------------------------------------------------------- validate cv
def cmd_cv(args: argparse.Namespace) -> int:
    from model.io import atomic_write_csv, to_json
    from validate.cv import cross_validate, overall

    progress = None if args.json else console.print
    cv = cross_validate(_training_table(args), args.rule, args.max_evals, progress)
    if args.output:
        atomic_write_csv(args.output, cv)
    if args.json:
        print(to_json({"cells": cv.to_dict(orient="records"), "overall": overall(cv)}))
        return 0
    shown = cv[["held_out", "op", "rows", "trained_rows", "median", "p90", "bias"]]
    shown = shown.rename(columns={"held_out": "held-out GPU", "trained_rows": "trained on (rows)",
                                  "median": "median |err|", "p90": "p90 |err|"})  # fmt: skip
    title = (f"Leave-one-GPU-out: fitted on the other GPUs ({args.rule} rule), predicting the "
             "held-out one; |predicted / measured − 1|, bias = median error")  # fmt: skip
    console.print(_table(title, shown, percent=("median |err|", "p90 |err|", "bias")))
    o = overall(cv)
    console.print(
        f"over {int(o['cells'])} GPU × class cells with training data: median "
        f"{100 * o['median_of_medians']:.1f} % (worst {100 * o['worst_median']:.1f} %),"
        f" p90 {100 * o['median_of_p90']:.1f} % (worst {100 * o['worst_p90']:.1f} %)"
    )
    if args.output:
        console.print(f"wrote {args.output}")
    return 0


def _add_cv_parser(vsub: argparse._SubParsersAction) -> None:
    from validate.cv import RULES
    from validate.store import RESULTS_DIR

    cv = vsub.add_parser("cv", help="leave-one-GPU-out cross-validation of the calibration")
    cv.add_argument("--measured", default=str(DEFAULT_ROOT), help="shared measurement folder")
    cv.add_argument("--results-device", action="append", help="also use this device's runs")
    cv.add_argument("--results", default=str(RESULTS_DIR), help="results store folder")
    cv.add_argument("--rule", choices=RULES, default="pooled",
                    help="what a held-out GPU learns from: all other GPUs pooled (the rule "
                    "calibrate fit uses), or its nearest architecture generation's")  # fmt: skip
    cv.add_argument("--max-evals", type=int, default=1500, help="fit evaluations per kind")
    cv.add_argument("-o", "--output", help="write the table as CSV (atomically)")
    cv.add_argument("--json", action="store_true")
    cv.set_defaults(handler=cmd_cv)


# ---------------------------------------------------------------- calibrate
def cmd_fit(args: argparse.Namespace) -> int:
    from hardware.presets import read_data_file
    from hardware.profiles import CALIBRATION_DIR, Profile
    from model.io import check_writable
    from validate.calibrate import fit_all, write_profile
    from validate.generation import generation_profiles

    out = Path(args.out or CALIBRATION_DIR)
    check_writable(out / "generic.yaml", "--out folder's profile")  # before the fit, not after
    table = _training_table(args)
    written = fit_all(table, out)
    if args.rule == "generation":  # opt-in: docs/validation.md, "Accuracy on a GPU ..."
        pooled = Profile.model_validate(read_data_file(written["generic"]))
        for gpu_id, profile in generation_profiles(table, pooled).items():
            written[gpu_id] = write_profile(profile, out / f"{gpu_id}.yaml")
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
    run.add_argument("--limit", type=whole(0), default=0, help="first N suite rows only")
    run.add_argument("--threads", type=THREADS, default=1, help="CPU threads (default 1)")
    run.add_argument("--check", action="store_true", help="exit 1 outside the accuracy band")
    run.add_argument("--fresh", action="store_true",
                     help="start over instead of resuming this suite's unfinished run")  # fmt: skip
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
    _add_cv_parser(vsub)
    add_serve_parser(vsub)
    add_e2e_parser(vsub)

    p = sub.add_parser("calibrate", help="fit calibration profiles; measure this CPU")
    csub = p.add_subparsers(dest="calibrate_command", required=True)
    fit = csub.add_parser("fit", help="fit hardware/calibration/*.yaml from measurements")
    fit.add_argument("--measured", default=str(DEFAULT_ROOT), help="shared measurement folder")
    fit.add_argument("--results-device", action="append", help="also fit this device's runs")
    fit.add_argument("--results", default=str(RESULTS_DIR), help="results store folder")
    fit.add_argument("--out", help="output folder (default hardware/calibration)")
    fit.add_argument("--rule", choices=("pooled", "generation"), default="pooled",
                     help="unmeasured GPUs: generic.yaml pooled over all measured GPUs, or also "
                     "a file per preset from its nearest measured generation")  # fmt: skip
    fit.set_defaults(handler=cmd_fit)
    cpu = csub.add_parser("cpu", help="measure this CPU's bandwidth and matmul peak into a spec")
    cpu.add_argument("--threads", type=THREADS, default=1, help="threads to measure with")
    cpu.add_argument("--quick", action="store_true", help="shorter measurement")
    cpu.add_argument("--results", default=str(RESULTS_DIR), help="results store folder")
    cpu.set_defaults(handler=cmd_cpu)
