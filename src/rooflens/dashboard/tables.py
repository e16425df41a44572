"""Display tables of operators: SI values from `Prediction.ops_frame()` turned into what a person
reads, each number with its unit and three significant digits.

A step's operators span nine decades (an embedding lookup in nanoseconds, a prefill GEMM in
seconds), so one fixed unit per column reads badly ("77790.392 µs"). FLOPs, bytes and times
therefore carry their own unit per cell ("77.8 ms", "21.5 GB"); intensities, attained TFLOP/s
and shares are plain numbers (their unit is in the header), three significant digits with
thousands separators. The CSV downloads keep the SI frame, untouched.

The tables are static (`st.table`): every column shows at any width, and a rerun redraws them
cheaply. Streamlit's interactive data grid took ~100 ms of the browser's time on each rerun of
Explore, Roofline and Optimizations (benchmarks/dashboard_browser.py), a third of the page.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pandas as pd
import streamlit as st

from rooflens.dashboard.numbers import fmt_sig
from rooflens.io.units import fmt_bytes, fmt_flops, fmt_time


def _numbers(values: Iterable[float]) -> list[str]:
    """'1,320', '0.625', '—' for nan (no FLOPs or no bytes, e.g. communication)."""
    return [fmt_sig(float(v)) for v in values]


def _intensity(frame: pd.DataFrame) -> list[str]:
    """FLOP/byte; '—' where an operator moves no bytes or does no FLOPs (communication)."""
    return _numbers(pd.to_numeric(frame["intensity"], errors="coerce").astype(float))


def _share(frame: pd.DataFrame) -> list[str]:
    total = frame.groupby("phase")["time_s"].transform("sum")
    return _numbers(np.where(total > 0, frame["time_s"] / total * 100, 0.0))


def ops_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The Explore page's operator table: cost and bound of every operator of both phases."""
    return pd.DataFrame(
        {
            "operator": frame["name"],
            "phase": frame["phase"],
            "calls per step": frame["count"],
            "FLOPs": [fmt_flops(v) for v in frame["flops"]],
            "bytes moved": [fmt_bytes(v) for v in frame["bytes"]],
            "intensity (FLOP/byte)": _intensity(frame),
            "time": [fmt_time(v) for v in frame["time_s"]],
            "share of step (%)": _share(frame),
            "bound": frame["bound"],
        }
    ).reset_index(drop=True)


def roofline_table(placed: pd.DataFrame) -> pd.DataFrame:
    """The operators on the roofline chart (`figures.roofline.roofline_points`' placed frame)."""
    return pd.DataFrame(
        {
            "operator": placed["name"],
            "phase": placed["phase"],
            "intensity (FLOP/byte)": _intensity(placed),
            "attained (TFLOP/s)": _numbers(placed["attained_flops_per_s"] / 1e12),
            "time": [fmt_time(v) for v in placed["time_s"]],
            "share of step (%)": _numbers(placed["share"] * 100),
            "bound": placed["bound"],
            "compute dtype": placed["compute_dtype"],
        }
    ).reset_index(drop=True)


# What Markdown reads as a block at the start of a cell: a list item ("+ KV cache", "1. x"), a
# heading or a quote. `st.table` renders cells as Markdown (with `$…$` as math); a backslash
# keeps the character.
BLOCK_START = re.compile(r"^(?:[-+*](?=\s|$)|#{1,6}(?=\s|$)|>|\d{1,9}(?=[.)](?:\s|$)))")


def plain(value: object) -> object:
    """A cell shown as written: a leading Markdown block marker and every `$` escaped."""
    if not isinstance(value, str):
        return value
    text = value.replace("$", "\\$")  # "$1.20 / $0.300" is not an equation
    match = BLOCK_START.match(text)
    if match is None:
        return text
    cut = match.end() if match.group().isdigit() else 0  # "1\. x", "\+ x"
    return text[:cut] + "\\" + text[cut:]


def show(table: pd.DataFrame) -> None:
    """A static table of every row (no inner scroll bar, no hidden column), its cells shown as
    written."""
    st.table(table.map(plain), hide_index=True)
