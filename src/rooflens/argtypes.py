"""Command-line text -> checked values: the argparse types every `rooflens` subcommand uses,
those of cli/ and those validate/ registers (validate/commands.py). It sits below both, next to
hardware/, because validate/ may not import cli/ (docs/architecture.md, "Layers").

Bounds that belong to the scenario stay on its pydantic fields (model/predict/scenario.py); these
types
only make sure a number is a number (whole, finite) and, for options that never reach a
pydantic model (threads, seeds, request counts), that it is in range.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

# Counts beyond this are typing slips, not deployments (a billion requests, threads, GPUs).
MAX_COUNT = 10**9


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
