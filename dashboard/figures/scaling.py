"""Scaling charts: latency and throughput against batch, context length and TP degree.

Two panels side by side (latency, throughput) on log axes. Points whose memory does not fit on
the GPU are drawn hollow and labelled in the hover: the cost model still prices them, but no
server could run them. Figures are built in one constructor call from plain dicts (plotly's
incremental `add_*`/`make_subplots` calls cost tens of milliseconds each on a rerun).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from dashboard.figures import LAYOUT

MS = 1e3
LATENCY = (("ttft_s", "TTFT", "#4c78a8"), ("tpot_s", "TPOT", "#f58518"))
PANELS = ((1, "Latency", [0.0, 0.44]), (2, "Output throughput", [0.56, 1.0]))


def _suffix(panel: int) -> str:
    return "" if panel == 1 else str(panel)


def _fit_hover(sub: pd.DataFrame, x_title: str, what: str) -> list[str]:
    return [
        f"{x_title} {x:,}: {what.format(y)}, {'fits' if fits else 'does NOT fit in memory'}"
        for x, y, fits in zip(sub["x"], sub["y"], sub["fits"], strict=True)
    ]


def _series(frame: pd.DataFrame, x: str, column: str, scale: float, name: str, panel: int,
            x_title: str, what: str, color: str | None = None) -> dict[str, Any]:  # fmt: skip
    sub = pd.DataFrame({"x": frame[x], "y": frame[column] * scale, "fits": frame["fits"]})
    return {
        "type": "scatter",
        "x": sub["x"].tolist(),
        "y": sub["y"].tolist(),
        "mode": "lines+markers",
        "name": name,
        "line": {"color": color} if color else {},
        "marker": {"size": 8, "symbol": ["circle" if f else "circle-open" for f in sub["fits"]]},
        "xaxis": f"x{_suffix(panel)}",
        "yaxis": f"y{_suffix(panel)}",
        "hovertext": _fit_hover(sub, x_title, what),
        "hoverinfo": "text",
    }


def vline(x: float, panel: int, dash: str, color: str = "black") -> dict[str, Any]:
    """A vertical line across one panel. Shapes take data coordinates, even on log axes."""
    s = _suffix(panel)
    return {"type": "line", "x0": x, "x1": x, "y0": 0, "y1": 1, "xref": f"x{s}",
            "yref": f"y{s} domain",
            "line": {"dash": dash, "color": color, "width": 1.5}}  # fmt: skip


def note(x: float, panel: int, text: str, xanchor: str, y: float) -> dict[str, Any]:
    """A label at x on a log axis: annotations take log10 of the data coordinate."""
    s = _suffix(panel)
    return {"x": math.log10(x), "y": y, "xref": f"x{s}", "yref": f"y{s} domain", "text": text,
            "showarrow": False, "xanchor": xanchor, "yanchor": "top",
            "bgcolor": "rgba(255,255,255,0.8)"}  # fmt: skip


def two_panel(
    frame: pd.DataFrame,
    x: str,
    x_title: str,
    throughput: list[tuple[str, str]],
    shapes: list[dict[str, Any]],
    notes: list[dict[str, Any]],
    title: str,
) -> go.Figure:
    traces = [
        _series(frame, x, column, MS, f"{name} (ms)", 1, x_title, name + " {:,.3g} ms", color)
        for column, name, color in LATENCY
    ] + [
        _series(frame, x, column, 1.0, name, 2, x_title, "{:,.4g} tokens/s")
        for column, name in throughput
    ]
    layout: dict[str, Any] = {**LAYOUT, "title": title, "height": 420,
                              "legend": {"orientation": "h", "y": -0.25}}  # fmt: skip
    for panel, panel_title, domain in PANELS:
        s = _suffix(panel)
        layout[f"xaxis{s}"] = {"domain": domain, "type": "log", "title": x_title,
                               "anchor": f"y{s}"}  # fmt: skip
        y_title = "time (ms)" if panel == 1 else "output tokens/s"
        layout[f"yaxis{s}"] = {"type": "log", "anchor": f"x{s}", "title": y_title}
        notes = [*notes, {"text": panel_title, "x": sum(domain) / 2, "y": 1.0, "xref": "paper",
                          "yref": "paper", "showarrow": False, "yanchor": "bottom"}]  # fmt: skip
    layout["shapes"] = shapes
    layout["annotations"] = notes
    return go.Figure(data=traces, layout=layout)


def batch_figure(
    frame: pd.DataFrame, crossover: tuple[int, int] | None, max_batch: int, batch: int
) -> go.Figure:
    """TTFT/TPOT and throughput over batch; decode's memory→compute crossover shaded, the
    memory limit (max batch) and the current batch drawn as vertical lines."""
    shapes, notes = [], []
    for panel in (1, 2):
        shapes.append(vline(batch, panel, "dot", "grey"))
        if max_batch >= 1:
            shapes.append(vline(max_batch, panel, "dash"))
        if crossover is not None:
            s = _suffix(panel)
            shapes.append({"type": "rect", "x0": crossover[0], "x1": crossover[1], "y0": 0,
                           "y1": 1, "xref": f"x{s}", "yref": f"y{s} domain",
                           "fillcolor": "red", "opacity": 0.15, "line": {"width": 0}})  # fmt: skip
    if crossover is not None:
        notes.append(note(crossover[0], 1, "decode turns compute-bound", "right", 0.98))
    if max_batch >= 1:
        notes.append(note(max_batch, 2, f"max batch {max_batch:,}", "left", 0.12))
    return two_panel(
        frame, "batch", "batch (sequences)", [("output_tokens_per_s", "throughput (tokens/s)")],
        shapes, notes, "Against batch (prompt and output fixed)",
    )  # fmt: skip


def context_figure(frame: pd.DataFrame, prompt_len: int) -> go.Figure:
    return two_panel(
        frame, "prompt_len", "prompt length (tokens)",
        [("output_tokens_per_s", "throughput (tokens/s)")],
        [vline(prompt_len, p, "dot", "grey") for p in (1, 2)], [],
        "Against context length (batch and output fixed)",
    )  # fmt: skip


def tp_figure(frame: pd.DataFrame, tp: int) -> go.Figure:
    fig = two_panel(
        frame, "tp", "tensor-parallel GPUs",
        [("output_tokens_per_s", "all GPUs (tokens/s)"),
         ("output_tokens_per_s_per_gpu", "per GPU (tokens/s)")],
        [vline(tp, p, "dot", "grey") for p in (1, 2)], [],
        "Against TP degree (batch, prompt and output fixed)",
    )  # fmt: skip
    ticks = {"tickvals": list(frame["tp"]), "ticktext": [str(t) for t in frame["tp"]]}
    fig.update_layout(xaxis=ticks, xaxis2=ticks)
    return fig
