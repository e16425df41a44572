"""Whole-model check (`rooflens validate e2e`): per-operator time of each scenario, the
prediction's stack beside the measured one, for one phase (prefill = TTFT, decode = TPOT), each
scenario labelled with its step's error (predicted / measured − 1, the caption's definition).

Input: the results-store frame of validate/e2e/report.py (`results_frame`): one row per
(batch, context, phase, op) with `predicted_s` and `measured_s`; the op `total` is the step.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from rooflens.dashboard.figures import LAYOUT, SERIES_COLORS

UNATTRIBUTED_COLOR = "rgba(120,120,120,0.55)"


def step_error(totals: pd.DataFrame, batch: object, context: object) -> float:
    """The step's error, predicted / measured − 1, from its `total` row (nan without one)."""
    hit = totals[(totals["batch"] == batch) & (totals["context"] == context)]
    if hit.empty or not float(hit["measured_s"].iloc[0]) > 0:
        return float("nan")
    return float(hit["predicted_s"].iloc[0]) / float(hit["measured_s"].iloc[0]) - 1.0


def _step_error(totals: pd.DataFrame, batch: object, context: object) -> str:
    error = step_error(totals, batch, context)
    return "" if error != error else f"<br>error {error * 100:+.0f} %"


def e2e_figure(frame: pd.DataFrame, phase: str) -> go.Figure:
    """Stacked bars per scenario: predicted and measured side by side, one colour per op."""
    rows = frame[(frame["phase"] == phase) & (frame["op"] != "total")]
    totals = frame[(frame["phase"] == phase) & (frame["op"] == "total")]
    scenarios = rows[["batch", "context"]].drop_duplicates().sort_values(["batch", "context"])
    labels = [
        f"B={b}, S={c}{_step_error(totals, b, c)}"
        for b, c in zip(scenarios["batch"], scenarios["context"], strict=True)
    ]
    x = [[lab for lab in labels for _ in (0, 1)], ["predicted", "measured"] * len(labels)]
    traces = []
    for k, op in enumerate(dict.fromkeys(rows["op"])):
        ms = []
        for b, c in zip(scenarios["batch"], scenarios["context"], strict=True):
            hit = rows[(rows["op"] == op) & (rows["batch"] == b) & (rows["context"] == c)]
            for column in ("predicted_s", "measured_s"):
                value = hit[column].iloc[0] if len(hit) else float("nan")
                ms.append(None if pd.isna(value) else float(value) * 1e3)
        shade = (
            UNATTRIBUTED_COLOR if op == "unattributed" else SERIES_COLORS[k % len(SERIES_COLORS)]
        )
        color = {"marker": {"color": shade}}
        traces.append(
            {
                "type": "bar",
                "name": op,
                "x": x,
                "y": ms,
                **color,
                "hovertemplate": f"{op}: %{{y:.4g}} ms<extra>%{{x}}</extra>",
            }
        )
    step = "TTFT (prefill)" if phase == "prefill" else "TPOT (one decode step)"
    layout = {
        **LAYOUT,
        "barmode": "stack",
        "height": 460,
        "title": f"{step} by operator: predicted beside measured, with the step's error",
        "yaxis": {"title": "time per step (ms)"},
        "legend": {"traceorder": "normal"},
    }
    return go.Figure(data=traces, layout=layout)
