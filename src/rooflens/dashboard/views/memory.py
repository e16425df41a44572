"""Memory: per-GPU weights, KV cache, activations and overhead against capacity (baseline beside
it when pinned), KV bytes per token, and the max batch over context length × KV dtype."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rooflens.dashboard import compute
from rooflens.dashboard.charts import show
from rooflens.dashboard.controls import Context
from rooflens.dashboard.export import download_row
from rooflens.dashboard.figures.memory import COMPONENTS, max_batch_heatmap, memory_bars
from rooflens.dashboard.views.common import baseline_prediction, fit_warning, scenario_line
from rooflens.io.units import fmt_bytes
from rooflens.model.predict.steps import MemoryBreakdown


def render(ctx: Context) -> None:
    s = ctx.settings
    pred = compute.prediction(s)
    base = baseline_prediction(ctx)
    mem = pred.memory
    st.header("Memory")
    scenario_line(ctx, pred)
    fit_warning(ctx, pred)
    kv = pred.scenario.precision.kv_dtype
    a, b = st.columns(2)  # two tiles a row: a value never gets cut at a 1400-px window
    c, d = st.columns(2)
    a.metric(
        "KV cache per token",
        f"{fmt_bytes(mem.kv_bytes_per_token)}/token",
        help=f"per GPU, all layers, K and V, in {kv}",
        border=True,
    )
    b.metric(
        "Used per GPU",
        fmt_bytes(mem.total_bytes),
        border=True,
        help=f"of {fmt_bytes(mem.capacity_bytes)} capacity",
    )
    free = mem.capacity_bytes - mem.total_bytes
    c.metric("Free per GPU" if free >= 0 else "Over capacity", fmt_bytes(abs(free)), border=True)
    d.metric(
        "Max batch (sequences)",
        f"{mem.max_batch:,}",
        border=True,
        help=f"at {pred.scenario.context_tokens:,} tokens per sequence",
    )
    bars = [("this scenario", mem)] + ([("baseline", base.memory)] if base is not None else [])
    fig = memory_bars(bars)
    show(fig, key="memory_bars")
    table = _components(bars)
    st.table(table)
    download_row("rooflens-memory", data={label: m.to_dict() for label, m in bars}, fig=fig)

    st.subheader("Max batch over context length and KV-cache precision")
    grid = compute.max_batch_grid(s)
    heat = max_batch_heatmap(grid, pred.scenario.context_tokens, kv)
    show(heat, key="memory_heatmap")
    st.caption(
        "Each cell: a prompt of that many tokens and one output token, with this page's "
        "model, GPU, weights, TP and optimizations; red outline: the nearest cell to now."
    )
    per_token = grid.drop_duplicates("kv_dtype")[["kv_dtype", "kv_bytes_per_token"]]
    st.caption(
        "KV bytes per token per GPU: "
        + ", ".join(
            f"{r['kv_dtype']} {fmt_bytes(float(r['kv_bytes_per_token']))}"
            for r in per_token.to_dict("records")
        )
    )
    download_row("rooflens-max-batch", frame=grid, fig=heat)


def _components(bars: list[tuple[str, MemoryBreakdown]]) -> pd.DataFrame:
    rows: dict[str, dict[str, str]] = {}
    for attr, name, _ in COMPONENTS:
        values = {label: getattr(m, attr) for label, m in bars}
        if any(values.values()):
            rows[name] = {label: fmt_bytes(v) for label, v in values.items()}
    rows["total"] = {label: fmt_bytes(m.total_bytes) for label, m in bars}
    rows["capacity"] = {label: fmt_bytes(m.capacity_bytes) for label, m in bars}
    rows["fits"] = {label: "yes" if m.fits else "NO" for label, m in bars}
    return pd.DataFrame(rows).T
