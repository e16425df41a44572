"""`rooflens validate {run,compare,report,cv,serve,e2e}` and `rooflens calibrate {fit,cpu}`:
the parsers only. cli/__init__.py registers them with `add_validate_parsers(sub)`; each
handler is in its own module (run_cli.py, compare_cli.py, cv_cli.py, serve_cli.py, e2e/cli.py,
calibrate_cli.py), printing in cli_render.py, and the work in the other validate/ modules.
"""

from __future__ import annotations

import argparse

from rooflens.argtypes import whole
from rooflens.validate.calibrate_cli import cmd_cpu, cmd_fit
from rooflens.validate.compare_cli import cmd_compare, cmd_report
from rooflens.validate.cv_cli import add_cv_parser
from rooflens.validate.e2e.cli import add_e2e_parser
from rooflens.validate.measured_files import DEFAULT_ROOT
from rooflens.validate.run_cli import THREADS, cmd_run
from rooflens.validate.serve_cli import add_serve_parser


def add_validate_parsers(sub: argparse._SubParsersAction) -> None:
    """Register `validate` and `calibrate` on the CLI's subcommand parser."""
    from rooflens.validate.store import RESULTS_DIR

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
    add_cv_parser(vsub)
    add_serve_parser(vsub)
    add_e2e_parser(vsub)

    p = sub.add_parser("calibrate", help="fit calibration profiles; measure this CPU")
    csub = p.add_subparsers(dest="calibrate_command", required=True)
    fit = csub.add_parser("fit", help="fit hardware/calibration/*.yaml from measurements")
    fit.add_argument("--measured", default=str(DEFAULT_ROOT), help="shared measurement folder")
    fit.add_argument("--results-device", action="append", help="also fit this device's runs")
    fit.add_argument("--own-kernels", action="store_true",
                     help="also fit this project's own runs in the measurement folder "
                     "(rooflens-*/: torch baselines, Triton kernels; off: they price no "
                     "deployment)")  # fmt: skip
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
