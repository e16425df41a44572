"""Scaling charts: latency and throughput against batch, context length and TP degree.

Two panels side by side (latency, throughput) on log axes. Points whose memory does not fit on
the GPU are drawn hollow and labelled in the hover: the cost model still prices them, but no
server could run them. Figures are built in one constructor call from plain dicts (plotly's
incremental `add_*`/`make_subplots` calls cost tens of milliseconds each on a rerun).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from rooflens.dashboard.figures import LAYOUT, inward
from rooflens.dashboard.numbers import fmt_count, fmt_ms, log_axis
from rooflens.io.units import fmt_quantity, fmt_time

MS = 1e3
LATENCY = (("ttft_s", "TTFT", "#4c78a8"), ("tpot_s", "TPOT", "#f58518"))
THROUGHPUT_COLORS = ("#54a24b", "#b279a2")
PANELS = ((1, "Latency", [0.0, 0.44]), (2, "Output throughput", [0.56, 1.0]))


def _suffix(panel: int) -> str:
    return "" if panel == 1 else str(panel)


def _fit_hover(sub: pd.DataFrame, x_title: str, what: Callable[[float], str]) -> list[str]:
    return [
        f"{x_title} {x:,}: {what(y)}, {'fits' if fits else 'does NOT fit in memory'}"
        for x, y, fits in zip(sub["x"], sub["y"], sub["fits"], strict=True)
    ]


Fmt = Callable[[float], str]


def _series(frame: pd.DataFrame, x: str, column: str, scale: float, name: str, panel: int,
            x_title: str, what: Fmt, color: str | None = None) -> dict[str, Any]:  # fmt: skip
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


def _time_label(name: str) -> Fmt:
    return lambda ms: f"{name} {fmt_time(ms / MS)}"


def _rate_label(name: str) -> Fmt:
    return lambda rate: f"{name} {fmt_quantity(rate, 'tokens/s')}"


def vline(x: float, panel: int, dash: str, color: str = "black") -> dict[str, Any]:
    """A vertical line across one panel. Shapes take data coordinates, even on log axes."""
    s = _suffix(panel)
    return {"type": "line", "x0": x, "x1": x, "y0": 0, "y1": 1, "xref": f"x{s}",
            "yref": f"y{s} domain",
            "line": {"dash": dash, "color": color, "width": 1.5}}  # fmt: skip


def current(x: float, name: str) -> list[dict[str, Any]]:
    """The current setting: a dotted grey line in both panels, one legend entry."""
    return [{**vline(x, p, "dot", "grey"), "showlegend": p == 1, "name": name} for p in (1, 2)]


def note(x: float, panel: int, text: str, xanchor: str, y: float) -> dict[str, Any]:
    """A label at x on a log axis: annotations take log10 of the data coordinate."""
    s = _suffix(panel)
    return {"x": math.log10(x), "y": y, "xref": f"x{s}", "yref": f"y{s} domain", "text": text,
            "showarrow": False, "xanchor": xanchor, "yanchor": "top",
            "bgcolor": "rgba(255,255,255,0.8)"}  # fmt: skip


def x_ticks(values: list[float], most: int = 7) -> dict[str, Any]:
    """Ticks at the swept values themselves (thinned to `most`), labelled in full: a sweep's
    grid (1, 2, 4, … sequences; 128 … 131,072 tokens) reads better than plotly's 1-2-5."""
    ticks = sorted(set(values))
    step = -(-len(ticks) // most)
    shown = ticks[::-1][::step][::-1]  # keep the last (largest) value
    return {"tickmode": "array", "tickvals": shown, "ticktext": [f"{v:,}" for v in shown]}


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
        _series(frame, x, column, MS, f"{name} (ms)", 1, x_title, _time_label(name), color)
        for column, name, color in LATENCY
    ] + [
        _series(
            frame,
            x,
            column,
            1.0,
            f"{name} (tokens/s)",
            2,
            x_title,
            _rate_label(name),
            color,
        )
        for (column, name), color in zip(throughput, THROUGHPUT_COLORS, strict=False)
    ]
    layout: dict[str, Any] = {**LAYOUT, "title": title, "height": 440,
                              "legend": {"orientation": "h", "y": -0.25}}  # fmt: skip
    latency_ms = [frame[c] * MS for c, _, _ in LATENCY]
    rates = [frame[c] for c, _ in throughput]
    x_axis = x_ticks(list(frame[x]))
    for panel, panel_title, domain in PANELS:
        s = _suffix(panel)
        layout[f"xaxis{s}"] = {"domain": domain, "type": "log", "title": x_title,
                               "anchor": f"y{s}", **x_axis}  # fmt: skip
        if panel == 1:
            y = log_axis(np.concatenate(latency_ms), fmt_ms, title="time (log scale)")
        else:
            y = log_axis(np.concatenate(rates), fmt_count, title="output tokens/s (log scale)")
        layout[f"yaxis{s}"] = {**y, "anchor": f"x{s}"}
        notes = [*notes, {"text": f"<b>{panel_title}</b>", "x": sum(domain) / 2, "y": 1.0,
                          "xref": "paper", "yref": "paper", "showarrow": False,
                          "yanchor": "bottom"}]  # fmt: skip
    layout["shapes"] = shapes
    layout["annotations"] = notes
    return go.Figure(data=traces, layout=layout)


def batch_figure(
    frame: pd.DataFrame, crossover: tuple[int, int] | None, max_batch: int, batch: int
) -> go.Figure:
    """TTFT/TPOT and throughput over batch; decode's memory→compute crossover shaded, the
    memory limit (max batch) and the current batch drawn as vertical lines."""
    shapes, notes = current(batch, f"this batch ({batch:,})"), []
    for panel in (1, 2):
        legend = {"showlegend": panel == 1}  # one legend entry per marker, not per panel
        if max_batch >= 1:
            shapes.append({**vline(max_batch, panel, "dash"), **legend,
                           "name": f"max batch that fits ({max_batch:,})"})  # fmt: skip
        if crossover is not None:
            s = _suffix(panel)
            shapes.append({"type": "rect", "x0": crossover[0], "x1": crossover[1], "y0": 0,
                           "y1": 1, "xref": f"x{s}", "yref": f"y{s} domain",
                           "fillcolor": "red", "opacity": 0.15, "line": {"width": 0}, **legend,
                           "name": "decode: memory- → compute-bound"})  # fmt: skip
    if max_batch >= 1:
        side = inward(max_batch, float(frame["batch"].min()), float(frame["batch"].max()))
        notes.append(note(max_batch, 2, f"max batch {max_batch:,}", side, 0.12))
    return two_panel(
        frame, "batch", "batch (sequences)", [("output_tokens_per_s", "throughput")],
        shapes, notes, "Against batch (prompt and output fixed)",
    )  # fmt: skip


def context_figure(frame: pd.DataFrame, prompt_len: int) -> go.Figure:
    return two_panel(
        frame, "prompt_len", "prompt length (tokens)",
        [("output_tokens_per_s", "throughput")],
        current(prompt_len, f"this prompt ({prompt_len:,} tokens)"), [],
        "Against context length (batch and output fixed)",
    )  # fmt: skip


def tp_figure(frame: pd.DataFrame, tp: int) -> go.Figure:
    return two_panel(
        frame, "tp", "tensor-parallel GPUs",
        [("output_tokens_per_s", "throughput, all GPUs"),
         ("output_tokens_per_s_per_gpu", "throughput per GPU")],
        current(tp, f"this TP ({tp})"), [],
        "Against TP degree (batch, prompt and output fixed)",
    )  # fmt: skip
