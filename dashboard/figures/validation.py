"""Validation chart the validator's report lacks: median and p90 error by operator class and GPU,
per profile, against the ±20 % band. (Parity and roofline figures come from validate.report.)"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard.figures import LAYOUT

BAND = 0.20


def error_figure(summary: pd.DataFrame, profiles: tuple[str, ...]) -> go.Figure:
    labels = [f"{g} {o}" for g, o in zip(summary["gpu"], summary["op"], strict=True)]
    traces = [
        {"type": "bar", "x": labels, "y": (summary[f"{p}_median"] * 100).tolist(),
         "name": f"{p}: median |error| (%)",
         "error_y": {"type": "data", "symmetric": False,
                     "array": ((summary[f"{p}_p90"] - summary[f"{p}_median"]) * 100).tolist(),
                     "arrayminus": [0] * len(summary)},
         "hovertemplate": "%{x}: median %{y:.1f} %<extra>" + p + "</extra>"}
        for p in profiles
    ]  # fmt: skip
    shapes = [{"type": "line", "x0": 0, "x1": 1, "xref": "paper", "y0": BAND * 100,
               "y1": BAND * 100, "line": {"dash": "dash", "color": "grey"}}]  # fmt: skip
    layout = {**LAYOUT, "barmode": "group", "height": 420, "shapes": shapes,
              "title": "Error by operator class and GPU (bars: median, whiskers: p90)",
              "yaxis": {"title": "|predicted / measured − 1| (%)"}}  # fmt: skip
    return go.Figure(data=traces, layout=layout)
