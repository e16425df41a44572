"""Validation: measured against predicted kernel times (from `validate/`'s results store and the
shared measurement sets), error by operator class and GPU, and the calibration profile in use."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.controls import Context
from dashboard.views.common import not_available
from hardware.presets import get_gpu
from hardware.profiles import get_profile


def render(ctx: Context) -> None:
    st.header("Validation")
    not_available(
        "Measured vs predicted (scatter with ±20 % bands, error by operator class and GPU)",
        "validate/",
        "issue 6 (the validator)",
    )
    _profile(ctx)


def _profile(ctx: Context) -> None:
    gpu = get_gpu(ctx.settings.gpu_ref)
    st.subheader(f"Calibration profile for {gpu.name}")
    profile = get_profile(ctx.settings.profile, gpu)
    calibrated = get_profile("calibrated", gpu)
    st.caption(
        f"In use: **{profile.name}** (sidebar). Calibrated profile source: {calibrated.source}"
        + (f"; fitted on {calibrated.gpu_id}" if calibrated.gpu_id else "; generic, any GPU")
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
    rows.append(
        {
            "operator kind": "communication",
            "compute (% of peak)": float("nan"),
            "memory (% of HBM bandwidth)": calibrated.comm_bandwidth_fraction * 100,
            "overhead per call (µs)": float("nan"),
        }
    )
    st.dataframe(pd.DataFrame(rows).round(2), hide_index=True, width="stretch")
    st.caption(
        "Communication: the row's bandwidth column is the achieved fraction of the link's "
        f"bandwidth; latency is {calibrated.comm_latency_scale:g} × the link latency per step."
    )
