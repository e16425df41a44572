"""Memory charts: stacked per-GPU memory against capacity, and max batch over context × KV dtype."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from rooflens.dashboard.figures import HEATMAP_TEXT_PX, LAYOUT
from rooflens.model.predict.steps import MemoryBreakdown

GB = 1e9
NOTHING_FITS, NOTHING_FITS_COLOR = -0.5, "#d9d9d9"
BAR_WIDTH = 0.35  # of a category: a lone bar stays a bar, not a wall
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
                           "width": BAR_WIDTH, "marker": {"color": color},
                           "hovertemplate": hover})  # fmt: skip
    shapes, notes = [], []
    for i, (_, mem) in enumerate(bars):
        capacity = mem.capacity_bytes / GB
        half = BAR_WIDTH / 2 + 0.05
        shapes.append({"type": "line", "x0": i - half, "x1": i + half, "y0": capacity,
                       "y1": capacity, "xref": "x", "yref": "y",
                       "line": {"color": "black", "width": 3}})  # fmt: skip
        # right of the bar, so a bar that overflows its capacity never hides the label
        notes.append({"x": i + half, "y": capacity, "text": f" capacity {capacity:,.1f} GB",
                      "showarrow": False, "xanchor": "left", "yanchor": "middle"})  # fmt: skip
    layout = {**LAYOUT, "barmode": "stack", "height": 420, "shapes": shapes, "annotations": notes,
              "yaxis": {"title": "memory per GPU (GB)", "rangemode": "tozero"},
              "title": "Memory per GPU against capacity"}  # fmt: skip
    return go.Figure(data=traces, layout=layout)


def max_batch_heatmap(grid: pd.DataFrame, current_context: int, current_kv: str) -> go.Figure:
    """Max batch (sequences) per context length × KV-cache dtype; the current cell outlined.

    Colour follows log10 of the max batch: it halves with every doubling of the context, so a
    linear scale would paint all but the shortest contexts the same dark colour. Cells where
    not even one sequence fits are grey and read "0" (below batch 1 on the colour bar)."""
    table = grid.pivot(index="kv_dtype", columns="context_tokens", values="max_batch")
    table = table.reindex(list(dict.fromkeys(grid["kv_dtype"])))
    batches = table.to_numpy(dtype=float)
    # log10(max batch); a cell where nothing fits gets NOTHING_FITS, which the scale paints grey
    colour = np.where(batches >= 1, np.log10(np.maximum(batches, 1)), NOTHING_FITS)
    top = max(float(colour.max()), 1.0)
    ticks = list(range(int(np.floor(top)) + 1))
    edge = -NOTHING_FITS / (top - NOTHING_FITS)  # where batch 1 sits on the 0..1 colour scale
    viridis = sample_colorscale("Viridis", 8)
    scale = [[0.0, NOTHING_FITS_COLOR], [edge * 0.999, NOTHING_FITS_COLOR]] + [
        [edge + (1 - edge) * k / (len(viridis) - 1), c] for k, c in enumerate(viridis)
    ]
    x = [f"{c:,}" for c in table.columns]
    fig = go.Figure(
        go.Heatmap(
            z=colour,
            x=x,
            y=list(table.index),
            zmin=NOTHING_FITS,
            zmax=top,
            colorscale=scale,
            text=[[f"{int(b):,}" for b in row] for row in batches],
            texttemplate="%{text}",
            textfont={"size": HEATMAP_TEXT_PX},
            customdata=batches,
            colorbar={
                "title": "max batch<br>(sequences)",
                "tickvals": [NOTHING_FITS, *ticks],
                "ticktext": ["0 (none fits)"] + [f"{10**t:,}" for t in ticks],
            },
            hovertemplate="context %{x} tokens, KV %{y}: max batch %{text} sequences"
            "<extra></extra>",
        )
    )
    contexts = [int(c) for c in table.columns]
    shapes = []
    if current_kv in table.index:
        nearest = min(range(len(contexts)), key=lambda i: abs(contexts[i] - current_context))
        row = list(table.index).index(current_kv)
        shapes.append({"type": "rect", "x0": nearest - 0.5, "x1": nearest + 0.5, "y0": row - 0.5,
                       "y1": row + 0.5, "line": {"color": "red", "width": 3}})  # fmt: skip
    fig.update_layout(
        **LAYOUT,
        height=360,
        shapes=shapes,
        title="Max batch that fits: context length × KV-cache dtype",
        xaxis={
            "title": "context per sequence (tokens)",
            "type": "category",
            "range": [-0.5, len(contexts) - 0.5],
        },
        yaxis={
            "title": "KV-cache dtype",
            "type": "category",
            "range": [-0.5, len(table.index) - 0.5],
        },
    )
    return fig
