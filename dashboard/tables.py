"""Display tables of operators: SI values from `Prediction.ops_frame()` turned into what a person
reads, each number with its unit and three significant digits.

A step's operators span nine decades (an embedding lookup in nanoseconds, a prefill GEMM in
seconds), so one fixed unit per column reads badly ("77790.392 µs"). FLOPs, bytes and times
therefore carry their own unit per cell ("77.8 ms", "21.5 GB"); intensities, attained TFLOP/s
and shares stay numbers (sortable; their unit is in the header) rounded to three significant
digits. The CSV downloads keep the SI frame, untouched.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
import streamlit as st

from dashboard.numbers import sig
from model.units import fmt_bytes, fmt_flops, fmt_time

ROW_PX, HEADER_PX, MAX_TABLE_PX = 35, 38, 1200


def _intensity(frame: pd.DataFrame) -> pd.Series:
    """FLOP/byte; nan where an operator moves no bytes or does no FLOPs (communication)."""
    values = pd.to_numeric(frame["intensity"], errors="coerce").astype(float)
    return pd.Series(sig(values.to_numpy()), index=frame.index)


def _share(frame: pd.DataFrame) -> pd.Series:
    total = frame.groupby("phase")["time_s"].transform("sum")
    share = np.where(total > 0, frame["time_s"] / total * 100, 0.0)
    return pd.Series(sig(share), index=frame.index)


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
            "attained (TFLOP/s)": sig(placed["attained_flops_per_s"].to_numpy() / 1e12),
            "time": [fmt_time(v) for v in placed["time_s"]],
            "share of step (%)": sig(placed["share"].to_numpy() * 100),
            "bound": placed["bound"],
            "compute dtype": placed["compute_dtype"],
        }
    ).reset_index(drop=True)


NUMBER_COLUMNS = ("intensity (FLOP/byte)", "attained (TFLOP/s)", "share of step (%)")


def show(table: pd.DataFrame, *, all_rows: bool = True) -> None:
    """`st.dataframe` with thousands separators on the numeric columns, tall enough to show
    every row without an inner scroll bar (up to MAX_TABLE_PX)."""
    config = {
        name: st.column_config.NumberColumn(format="localized")
        for name in NUMBER_COLUMNS
        if name in table
    }
    height: int | Literal["auto"] = "auto"
    if all_rows:
        height = min(MAX_TABLE_PX, HEADER_PX + ROW_PX * len(table) + 2)
    st.dataframe(table, hide_index=True, width="stretch", height=height, column_config=config,
                 placeholder="—")  # fmt: skip
