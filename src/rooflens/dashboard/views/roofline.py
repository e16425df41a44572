"""Roofline: the GPU's roof with every prefill and decode operator placed on it; the pinned
baseline's operators drawn hollow, so toggling an optimization shows where each one moves."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rooflens.dashboard import compute, tables
from rooflens.dashboard.charts import show
from rooflens.dashboard.controls import Context
from rooflens.dashboard.export import download_row
from rooflens.dashboard.figures.roofline import roofline_figure, roofline_points
from rooflens.dashboard.views.common import baseline_prediction, fit_warning, scenario_line
from rooflens.io.units import fmt_time

PHASES = {"both": ("prefill", "decode"), "prefill": ("prefill",), "decode": ("decode",)}


def render(ctx: Context) -> None:
    s = ctx.settings
    pred = compute.prediction(s)
    st.header("Roofline")
    scenario_line(ctx, pred)
    fit_warning(ctx, pred)
    phases = PHASES[st.radio("Phases", list(PHASES), horizontal=True, key="roofline_phases")]
    placed, skipped = roofline_points(compute.ops_frame(s))
    placed = placed[placed["phase"].isin(phases)]
    base_placed = None
    if baseline_prediction(ctx) is not None and ctx.baseline is not None:
        base_placed, _ = roofline_points(compute.ops_frame(ctx.baseline))
        base_placed = base_placed[base_placed["phase"].isin(phases)]
    gpu = pred.scenario.gpu
    fig = roofline_figure(
        gpu,
        placed,
        base_placed,
        title=f"{gpu.name}: {pred.scenario.model.name}, batch {s.batch:,}, "
        f"prompt {s.prompt_len:,} tokens (marker area ∝ share of its phase's step time)",
    )
    show(fig, key="roofline_chart")
    st.caption(
        "Ceilings are dense datasheet peaks per compute dtype; each operator computes on the "
        "unit its dtypes select. An operator below the roof takes longer than its roofline "
        "time: the calibrated profile's efficiencies and per-call overheads, or partial "
        "occupancy (e.g. decode attention with fewer thread blocks than SMs)."
    )
    _table(placed, skipped[skipped["phase"].isin(phases)])
    download_row("rooflens-roofline", frame=placed, fig=fig)


def _table(placed: pd.DataFrame, skipped: pd.DataFrame) -> None:
    """What the chart leaves out, then every operator on it."""
    if len(skipped):
        merged = skipped.groupby(["name", "phase", "reason"], sort=False, as_index=False)
        listed = (
            f"{r.name} ({r.phase}, {fmt_time(r.time_s)} per step): {r.reason}"
            for r in merged["time_s"].sum().itertuples()
        )
        st.caption("Not on the chart: " + "; ".join(listed))
    tables.show(tables.roofline_table(placed))
