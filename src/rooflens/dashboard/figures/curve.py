"""The latency–throughput curve: TPOT and TTFT against output tokens/s as the batch grows
(`dashboard.sweeps.batch_sweep`), with the memory limit and the critical batch (decode's
memory→compute crossover) marked. Points past the memory limit are hollow: priced, but no server
could run them."""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

from rooflens.dashboard.figures import LAYOUT, inward
from rooflens.dashboard.numbers import fmt_count, fmt_ms, log_axis
from rooflens.io.units import fmt_quantity, fmt_time

MS = 1e3
SERIES = (("tpot_s", "TPOT", "#f58518"), ("ttft_s", "TTFT", "#4c78a8"))


def curve_figure(
    frame: pd.DataFrame, crossover: tuple[int, int] | None, max_batch: int, batch: int
) -> go.Figure:
    traces: list[dict[str, Any]] = []
    for column, name, color in SERIES:
        hovers = [
            f"batch {b:,}: {name} {fmt_time(y)}, {fmt_quantity(x, 'tokens/s')}"
            + ("" if fits else " — does NOT fit in memory")
            for b, x, y, fits in zip(frame["batch"], frame["output_tokens_per_s"],
                                     frame[column], frame["fits"], strict=True)
        ]  # fmt: skip
        traces.append({"type": "scatter", "mode": "lines+markers+text", "name": name,
                       "x": frame["output_tokens_per_s"].tolist(),
                       "y": (frame[column] * MS).tolist(),
                       "text": [f"{b:,}" if name == "TPOT" else "" for b in frame["batch"]],
                       "textposition": "top left", "textfont": {"size": 9},
                       "marker": {"size": 8, "color": color, "symbol": [
                           "circle" if f else "circle-open" for f in frame["fits"]]},
                       "line": {"color": color}, "hovertext": hovers,
                       "hoverinfo": "text"})  # fmt: skip
    marks = [(batch, "current batch", "grey", "dot")]
    if 1 <= max_batch:
        fitting = frame[frame["batch"] <= max_batch]
        if len(fitting):
            marks.append((int(fitting["batch"].max()), f"memory limit ≈ {max_batch:,}", "black",
                          "dash"))  # fmt: skip
    if crossover is not None:
        marks.append((crossover[1], f"critical batch ≈ {crossover[1]:,}", "#d62728", "dashdot"))
    shapes, notes = [], []
    speed = frame["output_tokens_per_s"]
    for i, (b, label, color, dash) in enumerate(marks):
        row = frame[frame["batch"] == b]
        if row.empty:
            continue
        x = float(row["output_tokens_per_s"].iloc[0])
        shapes.append({"type": "line", "x0": x, "x1": x, "y0": 0, "y1": 1, "yref": "paper",
                       "line": {"color": color, "dash": dash, "width": 1.5}})  # fmt: skip
        side = inward(x, float(speed[speed > 0].min()), float(speed.max()))
        notes.append({"x": _log10(x), "y": 1.0 - 0.07 * i, "yref": "paper", "text": label,
                      "showarrow": False, "xanchor": side, "font": {"color": color},
                      "bgcolor": "rgba(255,255,255,0.8)"})  # fmt: skip
    latency_ms = pd.concat([frame[c] * MS for c, _, _ in SERIES])
    layout = {**LAYOUT, "title": "Latency against throughput as the batch grows (labels: batch)",
              "height": 420, "shapes": shapes, "annotations": notes,
              "xaxis": log_axis(frame["output_tokens_per_s"].to_numpy(), fmt_count,
                                title="output tokens/s (all sequences, log scale)"),
              "yaxis": log_axis(latency_ms.to_numpy(), fmt_ms, title="time (log scale)"),
              "legend": {"orientation": "h", "y": -0.2}}  # fmt: skip
    return go.Figure({"data": traces, "layout": layout})


def _log10(x: float) -> float:
    import math

    return math.log10(x) if x > 0 else 0.0
