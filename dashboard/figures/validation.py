"""Validation charts: predicted against measured kernel time (log-log, the y = x line and the
±20 % band), and the median error by operator class and GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.figures import LAYOUT

US = 1e6
BAND = 0.20
MAX_POINTS_PER_GROUP = 600  # a readable, fast scatter; statistics use every row


def sample(joined: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """At most MAX_POINTS_PER_GROUP rows per (GPU, op), drawn reproducibly."""
    shuffled = joined.sample(frac=1.0, random_state=seed)
    keep = shuffled.groupby(["gpu", "op"]).cumcount() < MAX_POINTS_PER_GROUP
    return shuffled[keep].reset_index(drop=True)


def scatter_figure(points: pd.DataFrame, profile: str) -> go.Figure:
    predicted = f"predicted_{profile}_s"
    lo = float(min(points["measured_s"].min(), points[predicted].min())) * US * 0.7
    hi = float(max(points["measured_s"].max(), points[predicted].max())) * US * 1.4
    line = np.array([lo, hi])
    traces: list[dict[str, Any]] = [
        {"type": "scatter", "x": line.tolist(), "y": line.tolist(), "mode": "lines",
         "name": "predicted = measured", "line": {"color": "black"}, "hoverinfo": "skip"},
        {"type": "scatter", "x": line.tolist(), "y": (line * (1 + BAND)).tolist(),
         "mode": "lines", "name": "±20 %", "line": {"color": "grey", "dash": "dash"},
         "hoverinfo": "skip"},
        {"type": "scatter", "x": line.tolist(), "y": (line * (1 - BAND)).tolist(),
         "mode": "lines", "showlegend": False, "line": {"color": "grey", "dash": "dash"},
         "hoverinfo": "skip"},
    ]  # fmt: skip
    for (gpu, op), g in points.groupby(["gpu", "op"], sort=True):
        hover = [
            f"{gpu} {op} ({impl})<br>measured {m * US:,.3g} µs, predicted {p * US:,.3g} µs"
            f"<br>error {e * 100:+.1f} %{' (faster than the roofline: cache)' if c else ''}"
            for impl, m, p, e, c in zip(g["impl"], g["measured_s"], g[predicted],
                                        g[f"error_{profile}"], g["below_ideal"], strict=True)
        ]  # fmt: skip
        traces.append({"type": "scattergl", "x": (g["measured_s"] * US).tolist(),
                       "y": (g[predicted] * US).tolist(), "mode": "markers",
                       "marker": {"size": 4, "opacity": 0.5}, "name": f"{gpu} {op}",
                       "hovertext": hover, "hoverinfo": "text"})  # fmt: skip
    layout = {**LAYOUT, "height": 560,
              "title": f"Predicted ({profile} profile) against measured kernel time",
              "xaxis": {"type": "log", "title": "measured (µs per call)"},
              "yaxis": {"type": "log", "title": f"predicted, {profile} (µs per call)"}}  # fmt: skip
    return go.Figure(data=traces, layout=layout)


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
