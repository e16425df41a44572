"""Scaling charts: latency and throughput against batch, context length and TP degree.

Points whose memory does not fit on the GPU are drawn hollow and labelled in the hover: the
cost model still prices them, but no server could run them.
"""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures import LAYOUT

MS = 1e3
LATENCY = (("ttft_s", "TTFT", "#4c78a8"), ("tpot_s", "TPOT", "#f58518"))


def _symbols(frame: pd.DataFrame) -> list[str]:
    return ["circle" if fits else "circle-open" for fits in frame["fits"]]


def _fit_text(frame: pd.DataFrame) -> list[str]:
    return ["fits" if fits else "does NOT fit in memory" for fits in frame["fits"]]


def _two_panel(
    frame: pd.DataFrame, x: str, x_title: str, log_x: bool, throughput: list[tuple[str, str]]
) -> go.Figure:
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("Latency", "Output throughput"),
        horizontal_spacing=0.12,
    )
    for column, name, color in LATENCY:
        fig.add_trace(
            go.Scatter(
                x=frame[x],
                y=frame[column] * MS,
                mode="lines+markers",
                name=f"{name} (ms)",
                line={"color": color},
                marker={"symbol": _symbols(frame), "size": 8},
                customdata=_fit_text(frame),
                hovertemplate=f"{x_title} %{{x:,}}: {name} %{{y:,.3g}} ms, %{{customdata}}"
                "<extra></extra>",
            ),
            row=1,
            col=1,
        )
    for column, name in throughput:
        fig.add_trace(
            go.Scatter(
                x=frame[x],
                y=frame[column],
                mode="lines+markers",
                name=name,
                marker={"symbol": _symbols(frame), "size": 8},
                customdata=_fit_text(frame),
                hovertemplate=f"{x_title} %{{x:,}}: %{{y:,.4g}} tokens/s, %{{customdata}}"
                "<extra></extra>",
            ),
            row=1,
            col=2,
        )
    axis_type = "log" if log_x else "linear"
    for col in (1, 2):
        fig.update_xaxes(title_text=x_title, type=axis_type, row=1, col=col)
    fig.update_yaxes(title_text="time (ms)", type="log", row=1, col=1)
    fig.update_yaxes(title_text="output tokens/s", type="log", row=1, col=2)
    fig.update_layout(**LAYOUT, height=420, legend={"orientation": "h", "y": -0.25})
    return fig


def _log_x(value: float) -> float:
    """Annotations on a log axis take log10 of the data coordinate (shapes take the data)."""
    return math.log10(value)


def _vline(fig: go.Figure, x: float, style: dict[str, str], text: str = "") -> None:
    for col in (1, 2):
        fig.add_vline(x=x, line=style, row=1, col=col)
    if text:
        fig.add_annotation(
            x=_log_x(x), y=0.02, yref="y2 domain", xref="x2", text=text, showarrow=False,
            xanchor="left", yanchor="bottom", bgcolor="rgba(255,255,255,0.8)",
        )  # fmt: skip


def batch_figure(
    frame: pd.DataFrame, crossover: tuple[int, int] | None, max_batch: int, batch: int
) -> go.Figure:
    """TTFT/TPOT and throughput over batch; decode's memory→compute crossover shaded, the
    memory limit (max batch) and the current batch drawn as vertical lines."""
    fig = _two_panel(
        frame,
        "batch",
        "batch (sequences)",
        True,
        [("output_tokens_per_s", "throughput (tokens/s)")],
    )
    if crossover is not None:
        for col in (1, 2):
            fig.add_vrect(
                x0=crossover[0], x1=crossover[1], fillcolor="red", opacity=0.15, line_width=0,
                row=1, col=col,
            )  # fmt: skip
        fig.add_annotation(
            x=_log_x(crossover[0]), y=0.98, xref="x", yref="y domain", showarrow=False,
            text="decode turns compute-bound", xanchor="right", yanchor="top",
            bgcolor="rgba(255,255,255,0.8)",
        )  # fmt: skip
    if max_batch >= 1:
        _vline(fig, max_batch, {"dash": "dash", "color": "black"}, f"max batch {max_batch:,}")
    _vline(fig, batch, {"dash": "dot", "color": "grey"})
    fig.update_layout(title="Against batch (prompt and output fixed)")
    return fig


def context_figure(frame: pd.DataFrame, prompt_len: int) -> go.Figure:
    fig = _two_panel(
        frame,
        "prompt_len",
        "prompt length (tokens)",
        True,
        [("output_tokens_per_s", "throughput (tokens/s)")],
    )
    _vline(fig, prompt_len, {"dash": "dot", "color": "grey"})
    fig.update_layout(title="Against context length (batch and output fixed)")
    return fig


def tp_figure(frame: pd.DataFrame, tp: int) -> go.Figure:
    fig = _two_panel(
        frame,
        "tp",
        "tensor-parallel GPUs",
        True,
        [
            ("output_tokens_per_s", "all GPUs (tokens/s)"),
            ("output_tokens_per_s_per_gpu", "per GPU (tokens/s)"),
        ],
    )
    _vline(fig, tp, {"dash": "dot", "color": "grey"})
    fig.update_xaxes(tickvals=list(frame["tp"]), ticktext=[str(t) for t in frame["tp"]])
    fig.update_layout(title="Against TP degree (batch, prompt and output fixed)")
    return fig
