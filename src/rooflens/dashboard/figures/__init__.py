"""Plotly figure builders: plain data (frames, specs) in, a `go.Figure` out, no Streamlit.

Every axis title and hover label carries its unit; values are converted from SI at this edge
only (ms, GB, TFLOP/s)."""

from __future__ import annotations

import math

BOUND_COLORS = {"memory": "#1f77b4", "compute": "#d62728", "comm": "#2ca02c"}
HEATMAP_TEXT_PX = 13  # heat-map cell text, fixed (plotly would shrink it to fit a cell)
PHASE_SYMBOLS = {"prefill": "circle", "decode": "diamond"}
BASELINE_COLOR = "rgba(120,120,120,0.55)"
# Streamlit's ten categorical colours, then ten more of other hues and depths, so a chart of up
# to 20 series (a whole model's operators) repeats none (issue 26 §4: 15 series on 10 colours).
SERIES_COLORS = ("#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700",
                 "#ffd16a", "#6d3fc0", "#d5dae5", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
                 "#17becf", "#222a2a", "#b68100", "#750d86", "#511cfb", "#862a16")  # fmt: skip
# The look (template "rooflens") is set once in dashboard/charts.py, which the pages draw through.
LAYOUT = {"margin": {"l": 60, "r": 20, "t": 50, "b": 50}}


def inward(x: float, lo: float, hi: float) -> str:
    """The `xanchor` that keeps a label at x (on a log axis over [lo, hi]) inside the plot: text
    runs right from a point in the left half and left from one in the right half, so a label
    near the right edge is never cut off (issue 26 §4: "critical batch ≈…", "memory limi…")."""
    if not (x > 0 and lo > 0 and hi > lo):
        return "left"
    return "left" if math.log(x / lo) <= math.log(hi / lo) / 2 else "right"
