"""The GPUs-side-by-side chart: one panel per metric (TTFT, TPOT, output tokens/s, $ per million
output tokens), one bar per GPU or system; a bar whose scenario does not fit is hatched."""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

from rooflens.dashboard.figures import LAYOUT
from rooflens.dashboard.headline import USD_PER_M_LABEL, fmt_usd_per_m
from rooflens.io.units import fmt_quantity, fmt_time

PANELS = (
    ("ttft_s", "TTFT (ms)", 1e3, fmt_time),
    ("tpot_s", "TPOT (ms)", 1e3, fmt_time),
    ("output_tokens_per_s", "output tokens/s", 1.0, lambda v: fmt_quantity(v, "tokens/s")),
    ("usd_per_million_tokens", USD_PER_M_LABEL, 1.0, fmt_usd_per_m),
)
GAP = 0.06


def compare_figure(frame: pd.DataFrame) -> go.Figure:
    width = (1.0 - GAP * (len(PANELS) - 1)) / len(PANELS)
    traces: list[dict[str, Any]] = []
    layout: dict[str, Any] = {**LAYOUT, "height": 360, "showlegend": False,
                              "title": "GPUs side by side (hatched: does not fit in memory)",
                              "annotations": []}  # fmt: skip
    for i, (column, title, scale, fmt) in enumerate(PANELS):
        s = "" if i == 0 else str(i + 1)
        values = frame[column]
        traces.append({"type": "bar", "x": frame["label"].tolist(),
                       "y": (values * scale).tolist(), "xaxis": f"x{s}", "yaxis": f"y{s}",
                       "text": [fmt(v) if pd.notna(v) else "no price" for v in values],
                       "textposition": "outside", "hoverinfo": "text",
                       "marker": {"color": "#4c78a8", "pattern": {"shape": [
                           "" if f else "/" for f in frame["fits"]]}}})  # fmt: skip
        x0 = i * (width + GAP)
        layout[f"xaxis{s}"] = {"domain": [x0, x0 + width], "anchor": f"y{s}"}
        layout[f"yaxis{s}"] = {"anchor": f"x{s}", "rangemode": "tozero"}
        layout["annotations"].append({"text": f"<b>{title}</b>", "x": x0 + width / 2, "y": 1.0,
                                      "xref": "paper", "yref": "paper", "showarrow": False,
                                      "yanchor": "bottom"})  # fmt: skip
    return go.Figure({"data": traces, "layout": layout})
