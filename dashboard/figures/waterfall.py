"""The optimization waterfall: one bar per stage of `model.waterfall.waterfall`, each the change
it brings to a chosen metric, from the naive baseline to the full stack."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from dashboard.figures import LAYOUT

GOOD, BAD, TOTAL = "#2ca02c", "#d62728", "#4c78a8"


@dataclass(frozen=True)
class WaterfallMetric:
    key: str  # a stage's key (SI units)
    label: str  # with the display unit
    scale: float  # SI -> display unit
    lower_is_better: bool


WATERFALL_METRICS = {
    m.key: m
    for m in (
        WaterfallMetric("tpot_s", "TPOT (ms)", 1e3, True),
        WaterfallMetric("ttft_s", "TTFT (ms)", 1e3, True),
        WaterfallMetric("output_tokens_per_s", "throughput at this batch (tokens/s)", 1.0, False),
        WaterfallMetric(
            "max_batch_output_tokens_per_s", "throughput at max batch (tokens/s)", 1.0, False
        ),
        WaterfallMetric("memory_bytes", "memory per GPU (GB)", 1e-9, True),
        WaterfallMetric("max_batch", "max batch (sequences)", 1.0, False),
    )
}


def stage_values(stages: list[dict[str, Any]], metric: WaterfallMetric) -> list[float]:
    """The metric per stage in display units; a stage where it does not exist (no batch fits,
    so no throughput at max batch) counts as 0."""
    out = []
    for stage in stages:
        value = stage.get(metric.key)
        out.append(0.0 if value is None else float(value) * metric.scale)
    return out


def waterfall_figure(
    stages: list[dict[str, Any]], metric: WaterfallMetric, title: str, y_max: float | None = None
) -> go.Figure:
    values = stage_values(stages, metric)
    labels = [s["stage"] for s in stages]
    deltas = [values[0]] + [b - a for a, b in itertools.pairwise(values)]
    texts = [f"{values[0]:,.4g}"]
    for a, b in itertools.pairwise(values):
        # the gain over the previous stage, > 1 when better (a speedup for times)
        gain = (a / b if b else math.inf) if metric.lower_is_better else (b / a if a else math.inf)
        texts.append(f"{b:,.4g} ({gain:,.2f}× better)" if gain >= 1 else f"{b:,.4g} ({gain:,.2f}×)")
    good, bad = (GOOD, BAD) if metric.lower_is_better else (BAD, GOOD)
    fig = go.Figure(
        go.Waterfall(
            x=[*labels, "full stack"],
            measure=["absolute"] + ["relative"] * (len(values) - 1) + ["total"],
            y=[*deltas, 0.0],
            text=[*texts, f"{values[-1]:,.4g}"],
            textposition="outside",
            decreasing={"marker": {"color": good}},
            increasing={"marker": {"color": bad}},
            totals={"marker": {"color": TOTAL}},
            connector={"line": {"color": "grey", "dash": "dot"}},
            hovertemplate="%{x}: %{text} " + metric.label.split("(")[-1].rstrip(")")
            + "<extra></extra>",
        )
    )  # fmt: skip
    top = y_max if y_max is not None and math.isfinite(y_max) else max([*values, 0.0]) * 1.2
    fig.update_layout(
        **LAYOUT,
        title=title,
        height=440,
        showlegend=False,
        yaxis={"title": metric.label, "range": [0, top or 1.0]},
    )
    return fig
