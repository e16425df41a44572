"""The time-breakdown chart: prefill and one decode step as 100 % stacked bars by operator class
(`dashboard.breakdown`), each segment labelled with its share, its time and its bound."""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

from rooflens.dashboard.breakdown import CLASSES
from rooflens.dashboard.figures import LAYOUT
from rooflens.io.units import fmt_time

CLASS_COLORS = dict(zip(CLASSES, ("#4c78a8", "#f58518", "#72b7b2", "#54a24b", "#b279a2",
                                  "#9d755d"),
                        strict=True))  # fmt: skip
OPTIONAL_CLASSES = ("host overhead",)  # drawn only when an eager step shows some
PHASE_LABELS = {"prefill": "prefill (TTFT step)", "decode": "one decode step"}
MIN_LABELLED_SHARE = 0.06  # narrower segments keep their numbers in the hover only


def breakdown_figure(frame: pd.DataFrame, title: str = "Where the step time goes") -> go.Figure:
    order = ("decode", "prefill")  # plotly draws the first category at the bottom
    rows = {(r["phase"], r["class"]): r for r in frame.to_dict("records")}
    traces: list[dict[str, Any]] = []
    for cls in CLASSES:
        if cls in OPTIONAL_CLASSES and not any(rows[(ph, cls)]["time_s"] for ph in order):
            continue  # graph-captured steps have no host overhead: no empty legend entry
        texts, hovers, shares = [], [], []
        for phase in order:
            r = rows[(phase, cls)]
            bound = f"{r['bound']}-bound" if r["bound"] else "none"
            detail = f"{r['share'] * 100:.0f} % · {fmt_time(r['time_s'])} · {bound}"
            texts.append(f"{cls}<br>{detail}" if r["share"] >= MIN_LABELLED_SHARE else "")
            hovers.append(f"{PHASE_LABELS[phase]}: {cls}, {detail}")
            shares.append(r["share"] * 100)
        traces.append({"type": "bar", "orientation": "h", "name": cls,
                       "y": [PHASE_LABELS[p] for p in order], "x": shares, "text": texts,
                       "textposition": "inside", "insidetextanchor": "middle",
                       "hovertext": hovers, "hoverinfo": "text",
                       "marker": {"color": CLASS_COLORS[cls]}})  # fmt: skip
    layout = {**LAYOUT, "title": title, "barmode": "stack", "height": 300,
              "xaxis": {"title": "share of the step time (%)", "range": [0, 100]},
              "legend": {"orientation": "h", "y": -0.35},
              "uniformtext": {"minsize": 10, "mode": "hide"}}  # fmt: skip
    return go.Figure({"data": traces, "layout": layout})
