"""The `rooflens` command: arguments -> model/ (and validate/) -> tables, JSON, CSV. This module
owns the top-level parser and `main`; each subcommand is a module of this package with
`add_parser(sub)` and its handler (listing, memory, predict, compare, kernels, plan, dashboard),
and the validator's subcommands come from validate/commands.py. Printing is in render.py and
plan_report.py, the shared scenario options in scenario_args.py.

Thin by design (DESIGN.md): no formulas here. Every failure the user can fix is a RooflensError,
printed as one line on stderr with exit status 2 (3 when the model does not fit in memory). So
are a bad argument (argtypes.py), an OSError (a file that cannot be read or written) and a
ValueError from a library. Anything else is a bug: one line says so and where to report it, and
`--debug` (anywhere on the line) shows the traceback.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence

from rooflens.cli import compare, dashboard, kernels, listing, memory, plan, predict
from rooflens.cli.args import (
    EXIT_BAD_INPUT,
    EXIT_DOES_NOT_FIT,
    OneLineParser,
    one_line,
    show_warning,
)

__all__ = ["EXIT_BAD_INPUT", "EXIT_DOES_NOT_FIT", "build_parser", "main"]


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="rooflens",
        description="Predict LLM inference on GPUs: memory, TTFT, TPOT, throughput, per-operator "
        "roofline, optimizations and capacity plans.",
    )
    parser.add_argument(
        "--debug", action="store_true", help="show an internal error's traceback (anywhere)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (listing, memory, predict, compare, kernels, plan):  # the order of --help
        command.add_parser(sub)
    from rooflens.validate.commands import (
        add_validate_parsers,  # validate {run,compare,report}, calibrate
    )

    add_validate_parsers(sub)
    dashboard.add_parser(sub)
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
