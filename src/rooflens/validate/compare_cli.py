"""`rooflens validate compare` and `validate report`: error statistics of stored or shared
measurements against the predictions, as a table or an HTML report.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from rooflens.hardware.errors import RooflensError
from rooflens.validate.cli_render import PROFILES, console, print_summary, warn


def _measurements(args: argparse.Namespace) -> tuple[pd.DataFrame, tuple[str, ...]]:
    from rooflens.validate.datasets import load_kernels
    from rooflens.validate.store import load_results

    if args.device:
        frame = load_results(args.device, Path(args.results), on_skip=warn)
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
    from rooflens.validate.compare import join, summarize
    from rooflens.validate.frontier import best_of_impls

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
    from rooflens.io.files import check_writable
    from rooflens.validate.compare import join, summarize
    from rooflens.validate.report import write_report

    check_writable(Path(args.output) / "report.html", "-o folder's report")
    measured, profiles = _measurements(args)
    joined = join(measured, profiles)
    summary = summarize(joined, ("gpu", "op"), profiles, subsets=True)
    path = write_report(joined, summary, Path(args.output), profiles)
    print_summary(summary, "Kernel error by GPU and operator class")
    console.print(f"wrote {path}")
    return 0
