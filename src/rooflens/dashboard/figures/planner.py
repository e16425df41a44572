"""Capacity-planner charts: the Pareto frontier of tokens/s per GPU against tokens/s per user
over the feasible configurations, and how many configurations each reason rejected.

A sweep over every GPU keeps thousands of feasible configurations (7.5 k for Llama 3 70B, a
1.8 MB figure with one hover line each); most sit on the same few pixels. The cloud is thinned to
the cheapest configuration per cell of a CELLS_X × CELLS_Y log grid (a cell is about one marker
wide), per GPU; the frontier and the recommendation are drawn exactly, and the CSV keeps every
row."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from rooflens.dashboard.figures import LAYOUT
from rooflens.dashboard.headline import fmt_usd_per_m
from rooflens.dashboard.numbers import fmt_count, log_axis
from rooflens.hardware.profiles import ENGINE_NAMES
from rooflens.io.units import fmt_number
from rooflens.model.planner.explain import engine_name
from rooflens.model.specs.quant import precision_label

REASON_LABELS = {
    "does_not_fit": "does not fit in memory",
    "over_capacity": "over capacity (queue or batch cap)",
    "misses_ttft": "misses the TTFT SLO",
    "misses_tpot": "misses the TPOT SLO",
}


def _hover(frame: pd.DataFrame) -> list[str]:
    rows: list[Any] = list(frame.itertuples())  # the sweep's rows (model/planner/sweep.py)
    return [
        f"{r.n_gpus} × {r.gpu} TP{r.tp}, {engine_name(r._asdict())}, "
        f"{precision_label(r.weight_dtype, r.act_dtype, r.kv_dtype, getattr(r, 'scheme', ''))}, "
        f"{r.mode}, batch {r.batch}"
        f"<br>{r.tokens_per_s_per_gpu:,.0f} tokens/s per GPU, "
        f"{r.tokens_per_s_per_user:,.1f} tokens/s per user"
        f"<br>TTFT p99 {r.ttft_p99_s * 1e3:,.0f} ms, TPOT p99 {r.tpot_p99_s * 1e3:,.1f} ms"
        f"<br>${fmt_number(r.cost_per_hour)} per hour, {fmt_usd_per_m(r.cost_per_million_tokens)}"
        f" per M output tokens"
        for r in rows
    ]


CELLS_X, CELLS_Y = 60, 30


def _series(frame: pd.DataFrame) -> list[str]:
    """What a cloud of the chart is per: the GPU, and the engine when several were searched."""
    several = "engine" in frame and frame["engine"].nunique() > 1
    return ["gpu", "engine"] if several else ["gpu"]


def _by_series(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(a cloud's name, its rows): 'h100-sxm', or 'h100-sxm, SGLang' when engines differ."""
    out = []
    for key, group in frame.groupby(_series(frame), sort=True):
        gpu, *engine = (str(k) for k in key)  # a tuple: grouped by a list of keys
        out.append((", ".join([gpu, *(ENGINE_NAMES[e] for e in engine)]), group))
    return out


def thin(feasible: pd.DataFrame) -> pd.DataFrame:
    """Per GPU and engine, the cheapest configuration ($/M output tokens) in each cell of a log
    grid over the chart's axes: what the cloud looks like at the chart's resolution, in far fewer
    points."""
    if feasible.empty:
        return feasible
    cells = []
    for column, n in (("tokens_per_s_per_user", CELLS_X), ("tokens_per_s_per_gpu", CELLS_Y)):
        logs = np.log10(feasible[column].clip(lower=1e-12).to_numpy(dtype=float))
        low, span = logs.min(), max(float(np.ptp(logs)), 1e-9)
        cells.append(np.minimum(((logs - low) / span * n).astype(int), n - 1))
    keyed = feasible.assign(_cx=cells[0], _cy=cells[1])
    cheapest = keyed.sort_values("cost_per_million_tokens", kind="stable")
    kept = cheapest.drop_duplicates([*_series(feasible), "_cx", "_cy"]).sort_index()
    return kept.drop(columns=["_cx", "_cy"])


def pareto_figure(
    feasible: pd.DataFrame, pareto: pd.DataFrame, recommended: dict[str, Any] | None
) -> go.Figure:
    traces: list[dict[str, Any]] = [
        {"type": "scatter", "x": group["tokens_per_s_per_user"].tolist(),
         "y": group["tokens_per_s_per_gpu"].tolist(), "mode": "markers",
         "marker": {"size": 6, "opacity": 0.45}, "name": f"{gpu} (feasible)",
         "hovertext": _hover(group), "hoverinfo": "text"}
        for gpu, group in _by_series(thin(feasible))
    ]  # fmt: skip
    if len(pareto):
        front = pareto.sort_values("tokens_per_s_per_user")
        traces.append({"type": "scatter", "x": front["tokens_per_s_per_user"].tolist(),
                       "y": front["tokens_per_s_per_gpu"].tolist(), "mode": "lines+markers",
                       "line": {"color": "black", "shape": "hv"},
                       "marker": {"size": 9, "color": "black"}, "name": "Pareto frontier",
                       "hovertext": _hover(front), "hoverinfo": "text"})  # fmt: skip
    if recommended is not None:
        rec = pd.DataFrame([recommended])
        traces.append({"type": "scatter", "x": rec["tokens_per_s_per_user"].tolist(),
                       "y": rec["tokens_per_s_per_gpu"].tolist(), "mode": "markers",
                       "marker": {"symbol": "star", "size": 20, "color": "gold",
                                  "line": {"width": 1}},
                       "name": "recommended (cheapest)", "hovertext": _hover(rec),
                       "hoverinfo": "text"})  # fmt: skip
    layout = {**LAYOUT, "height": 480,
              "title": "Throughput per GPU against speed per user (feasible configurations)",
              "xaxis": log_axis(feasible["tokens_per_s_per_user"].to_numpy(), fmt_count,
                                title="output tokens/s per user (1 / TPOT)"),
              "yaxis": log_axis(feasible["tokens_per_s_per_gpu"].to_numpy(), fmt_count,
                                title="output tokens/s per GPU")}  # fmt: skip
    return go.Figure({"data": traces, "layout": layout})


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
