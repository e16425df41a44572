"""Validation: measured against predicted kernel times from the shared measurement sets and the
validator's results store (`validate.datasets`, `validate.store`, joined and summarised by
`validate.compare`), error by operator class and GPU, and the calibration profile in use."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import compute
from dashboard.controls import Context, url_state
from dashboard.export import download_row
from dashboard.figures.validation import BAND, error_figure, sample, scatter_figure
from hardware.presets import get_gpu
from hardware.profiles import PROFILES, get_profile


def render(ctx: Context) -> None:
    st.header("Validation")
    sources = compute.validation_sources()
    left, right = st.columns(2)
    source = left.selectbox("Measurements", sources, key=url_state(ctx, "vsource", sources[0]))
    profile = right.radio("Profile", PROFILES, horizontal=True,
                          key=url_state(ctx, "vprofile", "calibrated"))  # fmt: skip
    joined = compute.validation_join(source)
    left, right = st.columns(2)
    all_gpus, all_ops = sorted(joined["gpu"].unique()), sorted(joined["op"].unique())
    gpus = left.multiselect("GPUs", all_gpus, default=all_gpus, key="vgpus")
    ops = right.multiselect("Operator classes", all_ops, default=all_ops, key="vops")
    rows = joined[joined["gpu"].isin(gpus) & joined["op"].isin(ops)]
    if rows.empty:
        st.info("Pick at least one GPU and one operator class.")
        _profile(ctx)
        return
    kept = rows[~rows["below_ideal"]]
    within = float(((kept[f"error_{profile}"]).abs() <= BAND).mean()) if len(kept) else 0.0
    a, b, c = st.columns(3)
    a.metric("Measured kernels", f"{len(rows):,} rows", border=True)
    b.metric(f"Within ±20 % ({profile})", f"{within * 100:.1f} % of rows", border=True)
    cache = int(rows["cache_effect"].sum())
    c.metric("Faster than the roofline (cache)", f"{cache:,} rows", border=True,
             help="left out of the error statistics; see validate/compare.py")  # fmt: skip
    points = sample(rows)
    scatter = scatter_figure(points, profile)
    st.plotly_chart(scatter, key="validation_scatter")
    st.caption(
        f"Each point is one measured call ({len(points):,} of {len(rows):,} drawn, at most "
        "600 per GPU and operator class); error = predicted / measured − 1."
    )
    summary = compute.validation_summary(source, tuple(gpus), tuple(ops))
    errors = error_figure(summary, PROFILES)
    st.plotly_chart(errors, key="validation_errors")
    st.dataframe(_summary_table(summary), hide_index=True, width="stretch")
    download_row("rooflens-validation", frame=summary, fig=scatter)
    _profile(ctx)


def _summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    table = pd.DataFrame(
        {
            "GPU": summary["gpu"],
            "operator class": summary["op"],
            "rows": summary["rows"],
            "left out (cache effects)": summary["excluded_cache"],
            "ideal under-predicts (% of rows)": summary["ideal_under_share"] * 100,
        }
    )
    for p in PROFILES:
        table[f"{p}: median |error| (%)"] = summary[f"{p}_median"] * 100
        table[f"{p}: p90 |error| (%)"] = summary[f"{p}_p90"] * 100
    return table.round(1)


def _profile(ctx: Context) -> None:
    gpu = get_gpu(ctx.settings.gpu_ref)
    calibrated = get_profile("calibrated", gpu)
    st.subheader(f"Calibration profile for {gpu.name}")
    st.caption(
        f"The sidebar's profile: **{ctx.settings.profile}**. Calibrated profile source: "
        f"{calibrated.source}"
        + (f" (fitted on {calibrated.gpu_id})" if calibrated.gpu_id else " (generic, any GPU)")
    )
    rows = [
        {
            "operator kind": kind,
            "compute (% of peak)": eff.compute_fraction * 100,
            "memory (% of HBM bandwidth)": eff.memory_fraction * 100,
            "overhead per call (µs)": eff.overhead_s * 1e6,
        }
        for kind, eff in calibrated.kinds.items()
    ]
    st.dataframe(pd.DataFrame(rows).round(2), hide_index=True, width="stretch")
    st.caption(
        f"Communication: {calibrated.comm_bandwidth_fraction * 100:.1f} % of the link bandwidth, "
        f"latency {calibrated.comm_latency_scale:g} × the link latency per step."
    )
