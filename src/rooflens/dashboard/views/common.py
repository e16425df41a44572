"""Pieces every page shares: the scenario line, the baseline's prediction and the does-not-fit
warning."""

from __future__ import annotations

import streamlit as st

from rooflens.dashboard import compute, sweeps
from rooflens.dashboard.controls import Context
from rooflens.dashboard.labels import workload_text
from rooflens.hardware.errors import RooflensError
from rooflens.io.units import fmt_bytes
from rooflens.model.predict.scenario import priced_by
from rooflens.model.predict.steps import Prediction


def scenario_line(ctx: Context, pred: Prediction) -> None:
    sc = pred.scenario
    st.caption(
        f"**{sc.model.name}** on **{sc.parallel.n_gpus} × {sc.gpu.name}** "
        f"({priced_by(sc.profile, sc.engine, sc.gpu)}): {workload_text(ctx.settings)}"
    )
    streaming = sweeps.streaming_note(ctx.settings)
    if streaming:
        st.info(f"Quality assumption: {streaming}.")


def baseline_prediction(ctx: Context) -> Prediction | None:
    """The pinned baseline's prediction; None when none is pinned or it equals the current one."""
    if ctx.baseline is None or ctx.baseline.with_(price_per_gpu_hour=0.0) == (
        ctx.settings.with_(price_per_gpu_hour=0.0)
    ):
        return None
    try:
        return compute.prediction(ctx.baseline)
    except RooflensError as exc:
        st.warning(f"the pinned baseline cannot be computed: {exc}")
        return None


def fit_warning(ctx: Context, pred: Prediction) -> None:
    """One line: by how much it is over, and what in the sidebar would make it fit."""
    mem = pred.memory
    if mem.fits:
        return
    over = mem.total_bytes - mem.capacity_bytes
    st.error(
        f"Does not fit: needs {fmt_bytes(mem.total_bytes)} per GPU, {fmt_bytes(over)} over "
        f"capacity ({fmt_bytes(mem.capacity_bytes)} usable on {pred.scenario.gpu.name}). "
        f"{compute.fit_advice(ctx.settings)} The times shown are what it would take if it did."
    )
