"""Memory charts: stacked per-GPU memory against capacity, and max batch over context × KV dtype."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard.figures import LAYOUT
from model.memory import MemoryBreakdown

GB = 1e9
COMPONENTS = (
    ("weights_bytes", "weights", "#4c78a8"),
    ("kv_cache_bytes", "KV cache", "#f58518"),
    ("activation_bytes", "activations (peak)", "#54a24b"),
    ("overhead_bytes", "runtime overhead", "#b279a2"),
    ("extra_bytes", "optimizations' extra", "#9d755d"),
)


def memory_bars(bars: list[tuple[str, MemoryBreakdown]]) -> go.Figure:
    """One stacked bar per scenario (GB per GPU), with each one's capacity marked."""
    labels = [label for label, _ in bars]
    traces = []
    for attr, name, color in COMPONENTS:
        values = [getattr(mem, attr) / GB for _, mem in bars]
        if any(values):
            hover = f"{name}: %{{y:,.2f}} GB<extra>%{{x}}</extra>"
            traces.append({"type": "bar", "x": labels, "y": values, "name": name,
                           "marker": {"color": color}, "hovertemplate": hover})  # fmt: skip
    shapes, notes = [], []
    for i, (_, mem) in enumerate(bars):
        capacity = mem.capacity_bytes / GB
        shapes.append({"type": "line", "x0": i - 0.45, "x1": i + 0.45, "y0": capacity,
                       "y1": capacity, "xref": "x", "yref": "y",
                       "line": {"color": "black", "width": 3}})  # fmt: skip
        notes.append({"x": i, "y": capacity, "text": f"capacity {capacity:,.1f} GB",
                      "showarrow": False, "yanchor": "bottom"})  # fmt: skip
    layout = {**LAYOUT, "barmode": "stack", "height": 420, "shapes": shapes, "annotations": notes,
              "yaxis": {"title": "memory per GPU (GB)", "rangemode": "tozero"},
              "title": "Memory per GPU against capacity"}  # fmt: skip
    return go.Figure(data=traces, layout=layout)


def max_batch_heatmap(grid: pd.DataFrame, current_context: int, current_kv: str) -> go.Figure:
    """Max batch (sequences) per context length × KV-cache dtype; the current cell outlined."""
    table = grid.pivot(index="kv_dtype", columns="context_tokens", values="max_batch")
    table = table.reindex(list(dict.fromkeys(grid["kv_dtype"])))
    x = [f"{c:,}" for c in table.columns]
    fig = go.Figure(
        go.Heatmap(
            z=table.to_numpy(),
            x=x,
            y=list(table.index),
            colorscale="Viridis",
            texttemplate="%{z:,}",
            colorbar={"title": "max batch (sequences)"},
            hovertemplate="context %{x} tokens, KV %{y}: max batch %{z:,} sequences<extra></extra>",
        )
    )
    contexts = list(table.columns)
    if current_kv in table.index:
        nearest = min(range(len(contexts)), key=lambda i: abs(contexts[i] - current_context))
        row = list(table.index).index(current_kv)
        fig.add_shape(
            type="rect",
            x0=nearest - 0.5,
            x1=nearest + 0.5,
            y0=row - 0.5,
            y1=row + 0.5,
            line={"color": "red", "width": 3},
        )
    fig.update_layout(
        **LAYOUT,
        height=360,
        title="Max batch that fits: context length × KV-cache dtype",
        xaxis={"title": "context per sequence (tokens)", "type": "category"},
        yaxis={"title": "KV-cache dtype", "type": "category"},
    )
    return fig
