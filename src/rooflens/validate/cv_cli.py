"""`rooflens validate cv`: leave-one-GPU-out cross-validation of the calibration, its arguments
and its table; the folds are in validate/cv.py.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from rooflens.validate.cli_render import console, table, training_table_of
from rooflens.validate.measured_files import DEFAULT_ROOT


def cmd_cv(args: argparse.Namespace) -> int:
    from rooflens.io.files import atomic_write_csv, check_writable, to_json
    from rooflens.validate.cv import cross_validate, overall, per_call, targets

    if args.output is not None:
        check_writable(args.output, "-o")  # before the cross-validation, not after it
    if args.folds is not None:
        check_writable(Path(args.folds) / "probe.yaml", "--folds")
    progress = None if args.json else console.print
    calls: list = []
    detail: list = []
    measured = training_table_of(args, include_own=True)  # own runs scored (cv.py)
    folds: dict = {}
    cv = cross_validate(measured, args.rule, args.max_evals, progress, calls, detail,
                        train_own=args.own_kernels, folds=folds)  # fmt: skip
    calls_summary = per_call(calls)
    goals = targets(detail)
    if args.output is not None:
        atomic_write_csv(args.output, cv, "-o")
    if args.folds is not None:
        from rooflens.validate.profile_fit import write_profile

        for gpu, profile in folds.items():  # the profile each held-out GPU was priced with
            write_profile(profile, Path(args.folds) / f"{gpu}.yaml", by="rooflens validate cv")
    if args.json:
        print(to_json({"cells": cv.to_dict(orient="records"), "overall": overall(cv),
                       "per_call": calls_summary,
                       "targets": goals.to_dict(orient="records")}))  # fmt: skip
        return 0
    shown = cv[["held_out", "engine", "op", "rows", "trained_rows", "median", "p90", "bias"]]
    shown = shown.rename(columns={"held_out": "held-out GPU", "trained_rows": "trained on (rows)",
                                  "median": "median |err|", "p90": "p90 |err|"})  # fmt: skip
    title = (f"Leave-one-GPU-out: fitted on the other GPUs ({args.rule} rule), predicting the "
             "held-out one; |predicted / measured − 1|, bias = median error")  # fmt: skip
    console.print(table(title, shown, percent=("median |err|", "p90 |err|", "bias")))
    o = overall(cv)
    console.print(
        f"over {int(o['cells'])} GPU × class cells with training data: median "
        f"{100 * o['median_of_medians']:.1f} % (worst {100 * o['worst_median']:.1f} %),"
        f" p90 {100 * o['median_of_p90']:.1f} % (worst {100 * o['worst_p90']:.1f} %)"
    )
    console.print(
        f"per call over {int(calls_summary['rows']):,} held-out rows (fused MoE left out): median "
        f"{100 * calls_summary['median']:.1f} %, p90 {100 * calls_summary['p90']:.1f} %"
    )
    for g in goals.to_dict("records"):  # plain values, one line per class
        console.print(
            f"{g['class']}, per call over {int(g['rows']):,} held-out rows: median "
            f"{_against(g['median'], g['target_median'])}, p90 "
            f"{_against(g['p90'], g['target_p90'])}; worst GPU × op median "
            f"{_against(g['worst_cell_median'], g['target_worst_cell'])}"
        )
    if args.output:
        console.print(f"wrote {args.output}")
    if args.folds:
        console.print(f"wrote {len(folds)} fold profiles to {args.folds}")
    return 0


def _against(value: float, target: float | None) -> str:
    """'14.4 % (target ≤ 10 %)', or the figure alone for a class without that target."""
    shown = f"{100 * float(value):.1f} %"
    if target is None or math.isnan(float(target)):
        return shown
    return f"{shown} (target ≤ {100 * float(target):.0f} %)"


def add_cv_parser(vsub: argparse._SubParsersAction) -> None:
    from rooflens.validate.cv import RULE_TEXT, RULES
    from rooflens.validate.fit_terms import FIT_EVALS
    from rooflens.validate.store import RESULTS_DIR

    cv = vsub.add_parser("cv", help="leave-one-GPU-out cross-validation of the calibration")
    cv.add_argument("--measured", default=str(DEFAULT_ROOT), help="shared measurement folder")
    cv.add_argument("--results-device", action="append", help="also use this device's runs")
    cv.add_argument(
        "--own-kernels",
        action="store_true",
        help="also train on this project's own runs (rooflens-*/; always scored)",
    )
    cv.add_argument("--results", default=str(RESULTS_DIR), help="results store folder")
    cv.add_argument("--rule", choices=RULES, default="sibling",
                    help="what a held-out GPU learns from: " + "; ".join(
                        f"{rule}: {text}" for rule, text in RULE_TEXT.items()))  # fmt: skip
    cv.add_argument("--max-evals", type=int, default=FIT_EVALS, help="fit evaluations per kind")
    cv.add_argument("-o", "--output", help="write the table as CSV (atomically)")
    cv.add_argument("--folds", metavar="DIR",
                    help="also write the profile each held-out GPU was priced with, as "
                    "DIR/<gpu>.yaml (whole steps held out: python -m benchmarks.engine_steps "
                    "--held-out DIR)")  # fmt: skip
    cv.add_argument("--json", action="store_true")
    cv.set_defaults(handler=cmd_cv)
