"""Command-line text -> checked values: the argument types and the parser every `rooflens`
subcommand uses, and `one_line`, how cli.py prints an exception, so that bad input ends in one
line and exit 2 and a bug in one line saying where to report it, never a traceback.

Bounds that belong to the scenario stay on its pydantic fields (model/scenario.py); these types
only make sure a number is a number (whole, finite) and, for options that never reach a
pydantic model (threads, seeds, request counts), that it is in range.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import NoReturn

EXIT_BUG = 1
EXIT_BAD_INPUT = 2
REPORT = "please report it as a rooflens issue, with the command and its `--debug` output"
# Counts beyond this are typing slips, not deployments (a billion requests, threads, GPUs).
MAX_COUNT = 10**9


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit 2), with where to look."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


def whole(lo: int | None = None, hi: int = MAX_COUNT, what: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number in [lo, hi]; `what` says what lo means when shown."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if (lo is not None and value < lo) or value > hi:
            low = f"{lo}" if lo is not None else "−∞"
            note = f" ({what})" if what else ""
            raise argparse.ArgumentTypeError(f"{value} is outside {low}..{hi:,}{note}")
        return value

    parse.__name__ = "whole number"
    return parse


def finite(
    lo: float | None = None, strict: bool = False, hi: float = float(MAX_COUNT)
) -> Callable[[str], float]:
    """An argparse type: a finite number, ≥ lo (> lo when strict), ≤ hi."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
        if lo is not None and (value < lo or (strict and value == lo)):
            raise argparse.ArgumentTypeError(f"{text} must be {'>' if strict else '≥'} {lo:g}")
        if value > hi:
            raise argparse.ArgumentTypeError(f"{text} is over {hi:g}")
        return value

    parse.__name__ = "number"
    return parse


count = whole()  # a whole number; the scenario's fields check its range
positive = whole(1)
non_negative = whole(0)
finite_number = finite()
positive_number = finite(0.0, strict=True)
non_negative_number = finite(0.0)


def one_line(exc: Exception) -> int:
    """Print an exception as one line on stderr; return the exit status it stands for.

    Bad input (RooflensError, or a ValueError/OSError from a library on the user's data or
    files, or a file nested too deeply to read) is exit 2; anything else is a bug, exit 1.
    """
    if isinstance(exc, OSError):
        name = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {name}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if isinstance(exc, RecursionError):
        print("error: the input is nested too deeply to read", file=sys.stderr)
        return EXIT_BAD_INPUT
    if isinstance(exc, ValueError):
        lines = str(exc).strip().splitlines()
        print(f"error: {lines[0] if lines else type(exc).__name__}", file=sys.stderr)
        return EXIT_BAD_INPUT
    lines = str(exc).strip().splitlines()
    detail = f": {lines[0]}" if lines else ""
    print(f"internal error ({type(exc).__name__}{detail}); this is a bug: {REPORT}",
          file=sys.stderr)  # fmt: skip
    return EXIT_BUG


def show_warning(message: Warning | str, *_: object, **__: object) -> None:
    """`warnings.showwarning` for the CLI: `warning: <message>` on one line of stderr."""
    print(f"warning: {str(message).splitlines()[0] if str(message) else message}",
          file=sys.stderr)  # fmt: skip
