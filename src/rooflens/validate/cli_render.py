"""How the `rooflens validate` and `calibrate` subcommands print and what they share: the
console, titled tables with percent columns, the error-summary table, warnings on stderr, the
profiles compared, and the training table the calibration commands read.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

from rooflens.validate.datasets import training_table

console = Console(width=200)
PROFILES = ("ideal", "calibrated")


def table(title: str, frame: pd.DataFrame, percent: Sequence[str] = ()) -> Table:
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
    console.print(table(title, summary.rename(columns=SHORT_NAMES), percent=percent))


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def training_table_of(args: argparse.Namespace, include_own: bool = False) -> pd.DataFrame:
    return training_table(
        Path(args.measured), Path(args.results), args.results_device or [], include_own
    )
