"""Capacity-planner charts: the Pareto frontier of tokens/s per GPU against tokens/s per user
over the feasible configurations, and how many configurations each reason rejected."""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

from dashboard.figures import LAYOUT
from dashboard.numbers import fmt_count, log_axis

REASON_LABELS = {
    "does_not_fit": "does not fit in memory",
    "over_capacity": "over capacity (queue or batch cap)",
    "misses_ttft": "misses the TTFT SLO",
    "misses_tpot": "misses the TPOT SLO",
}


def _hover(frame: pd.DataFrame) -> list[str]:
    return [
        f"{r.n_gpus} × {r.gpu} TP{r.tp}, {r.weight_dtype}/{r.kv_dtype}, {r.mode}, batch {r.batch}"
        f"<br>{r.tokens_per_s_per_gpu:,.0f} tokens/s per GPU, "
        f"{r.tokens_per_s_per_user:,.1f} tokens/s per user"
        f"<br>TTFT p99 {r.ttft_p99_s * 1e3:,.0f} ms, TPOT p99 {r.tpot_p99_s * 1e3:,.1f} ms"
        f"<br>${r.cost_per_hour:,.2f}/h, ${r.cost_per_million_tokens:,.3f} per M tokens"
        for r in frame.itertuples()
    ]


def pareto_figure(
    feasible: pd.DataFrame, pareto: pd.DataFrame, recommended: dict[str, Any] | None
) -> go.Figure:
    fig = go.Figure()
    for gpu, group in feasible.groupby("gpu", sort=True):
        fig.add_trace(
            go.Scatter(
                x=group["tokens_per_s_per_user"],
                y=group["tokens_per_s_per_gpu"],
                mode="markers",
                marker={"size": 6, "opacity": 0.45},
                name=f"{gpu} (feasible)",
                hovertext=_hover(group),
                hoverinfo="text",
            )
        )
    if len(pareto):
        front = pareto.sort_values("tokens_per_s_per_user")
        fig.add_trace(
            go.Scatter(
                x=front["tokens_per_s_per_user"],
                y=front["tokens_per_s_per_gpu"],
                mode="lines+markers",
                line={"color": "black", "shape": "hv"},
                marker={"size": 9, "color": "black"},
                name="Pareto frontier",
                hovertext=_hover(front),
                hoverinfo="text",
            )
        )
    if recommended is not None:
        rec = pd.DataFrame([recommended])
        fig.add_trace(
            go.Scatter(
                x=rec["tokens_per_s_per_user"],
                y=rec["tokens_per_s_per_gpu"],
                mode="markers",
                marker={"symbol": "star", "size": 20, "color": "gold", "line": {"width": 1}},
                name="recommended (cheapest)",
                hovertext=_hover(rec),
                hoverinfo="text",
            )
        )
    fig.update_layout(
        **LAYOUT,
        height=480,
        title="Throughput per GPU against speed per user (feasible configurations)",
        xaxis=log_axis(
            feasible["tokens_per_s_per_user"],
            fmt_count,
            title="output tokens/s per user (1 / TPOT)",
        ),
        yaxis=log_axis(
            feasible["tokens_per_s_per_gpu"], fmt_count, title="output tokens/s per GPU"
        ),
    )
    return fig


def rejected_figure(rejected: dict[str, int], n_feasible: int) -> go.Figure:
    labels = [REASON_LABELS.get(k, k) for k in rejected] + ["feasible"]
    counts = [*rejected.values(), n_feasible]
    fig = go.Figure(
        go.Bar(
            x=counts,
            y=labels,
            orientation="h",
            text=[f"{c:,}" for c in counts],
            textposition="outside",
            cliponaxis=False,
            marker_color=["#d62728"] * len(rejected) + ["#2ca02c"],
            hovertemplate="%{y}: %{x:,} configurations<extra></extra>",
        )
    )
    layout = {**LAYOUT, "margin": {**LAYOUT["margin"], "r": 60}}
    fig.update_layout(
        **layout,
        height=300,
        title="Why configurations were rejected (first failing check)",
        xaxis={"title": "configurations (count)", "rangemode": "tozero"},
        yaxis={"automargin": True},
    )
    return fig
