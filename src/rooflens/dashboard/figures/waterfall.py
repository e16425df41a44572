"""The optimization waterfall: one bar per stage of `model.waterfall.waterfall`, each the change
it brings to a chosen metric, from the naive baseline to the full stack."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from rooflens.dashboard.figures import LAYOUT
from rooflens.dashboard.numbers import fmt_sig, log_ticks

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


def _gain(before: float, after: float, lower_is_better: bool) -> float:
    """How many times better `after` is than `before` (> 1 better, < 1 worse)."""
    if lower_is_better:
        return before / after if after else math.inf
    return after / before if before else math.inf


def waterfall_range(values: list[float]) -> tuple[float, float, bool]:
    """(bottom, top, log) of a y axis that holds every value: log when all are positive, so each
    bar's length is the factor its stage gains (a 17× and a 1.1× speedup both stay visible)."""
    positive = [v for v in values if v > 0]
    if positive and len(positive) == len(values):
        return min(positive) / 2, max(positive) * 3, True
    return 0.0, max([*values, 0.0]) * 1.25 or 1.0, False


def _log_ticks(bottom: float, top: float) -> dict[str, Any]:
    ticks = log_ticks(bottom, top)
    return {"tickmode": "array", "tickvals": ticks, "ticktext": [fmt_sig(t) for t in ticks]}


def waterfall_figure(
    stages: list[dict[str, Any]],
    metric: WaterfallMetric,
    title: str,
    y_range: tuple[float, float, bool] | None = None,
) -> go.Figure:
    """Bar 1: the naive baseline's value; each later bar: the change a stage brings; the last:
    the full stack. Each bar is labelled above its top with the value after it and how many
    times better that is than the stage before; the hover says it in words."""
    values = stage_values(stages, metric)
    labels = [*(s["stage"] for s in stages), "full stack"]
    deltas = [values[0]] + [b - a for a, b in itertools.pairwise(values)]
    unit = metric.label.split("(")[-1].rstrip(")")
    texts, hovers = [fmt_sig(values[0])], [f"baseline: {fmt_sig(values[0], unit)}"]
    tops = [values[0]]
    for label, (a, b) in zip(labels[1:], itertools.pairwise(values), strict=False):
        gain = _gain(a, b, metric.lower_is_better)
        texts.append(f"{fmt_sig(b)}<br>{fmt_sig(gain)}×")
        hovers.append(f"{label}: {fmt_sig(a)} → {fmt_sig(b, unit)}, {fmt_sig(gain)}× "
                      f"{'better' if gain >= 1 else 'as good'} than the stage before")  # fmt: skip
        tops.append(max(a, b))
    total = _gain(values[0], values[-1], metric.lower_is_better)
    texts.append(f"{fmt_sig(values[-1])}<br>{fmt_sig(total)}× total")
    hovers.append(f"full stack: {fmt_sig(values[-1], unit)}, {fmt_sig(total)}× the baseline")
    tops.append(values[-1])
    bottom, top, log = y_range if y_range is not None else waterfall_range(values)
    notes = [
        {"x": x, "y": math.log10(max(y, bottom)) if log else y, "text": text, "showarrow": False,
         "yanchor": "bottom", "font": {"size": 12}}
        for x, y, text in zip(labels, tops, texts, strict=True)
    ]  # fmt: skip
    good, bad = (GOOD, BAD) if metric.lower_is_better else (BAD, GOOD)
    fig = go.Figure(
        go.Waterfall(
            x=labels,
            measure=["absolute"] + ["relative"] * (len(values) - 1) + ["total"],
            y=[*deltas, 0.0],
            base=0.0,
            text=texts,
            textposition="none",  # labelled by annotations above each bar instead
            decreasing={"marker": {"color": good}},
            increasing={"marker": {"color": bad}},
            totals={"marker": {"color": TOTAL}},
            connector={"line": {"color": "grey", "dash": "dot"}},
            hovertext=hovers,
            hoverinfo="text",
        )
    )
    axis_range = [math.log10(bottom), math.log10(top)] if log else [bottom, top]
    fig.update_layout(
        **LAYOUT,
        title=title,
        height=480,
        showlegend=False,
        annotations=notes,
        yaxis={
            "title": metric.label + (" — log scale" if log else ""),
            "type": "log" if log else "linear",
            "range": axis_range,
            **(_log_ticks(bottom, top) if log else {}),
        },
        xaxis={"tickangle": -30},
    )
    return fig
