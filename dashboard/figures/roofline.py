"""The roofline chart: the GPU's roof (memory slope, one compute ceiling per dtype, ridge points)
with every operator of prefill and decode at its arithmetic intensity and attained FLOP/s.

Roofline model: attainable FLOP/s = min(peak, intensity × bandwidth) (Williams, Waterman and
Patterson, CACM 2009); the ridge point is peak / bandwidth. An operator's attained FLOP/s is its
FLOPs over its priced time, so it sits on the roof under the ideal profile and below it under a
calibrated one (or when a per-call overhead or communication adds time). Traces are plain dicts
given to one `go.Figure` call: plotly's incremental `add_trace` costs milliseconds a trace.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.figures import BASELINE_COLOR, BOUND_COLORS, LAYOUT, PHASE_SYMBOLS
from hardware.spec import GPUSpec
from model.units import fmt_bytes, fmt_flops, fmt_time

TERA = 1e12
MIN_MARKER_PX, MAX_EXTRA_MARKER_PX = 7.0, 38.0


def roofline_points(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(placed, skipped): operators with FLOPs and bytes get intensity, attained FLOP/s and their
    share of their phase's step time; the rest (communication, pure data movement) are listed
    with the reason they have no place on the chart."""
    df = frame.copy()
    phase_total = df.groupby("phase")["time_s"].transform("sum")
    df["share"] = np.where(phase_total > 0, df["time_s"] / phase_total, 0.0)
    placeable = (df["flops"] > 0) & (df["bytes"] > 0) & (df["time_s"] > 0)
    placed = df[placeable].copy()
    placed["attained_flops_per_s"] = placed["flops"] / placed["time_s"]
    skipped = df[~placeable].copy()
    skipped["reason"] = np.where(
        skipped["kind"] == "comm",
        "communication (no FLOPs; time is link-bound)",
        np.where(skipped["flops"] <= 0, "moves data, no FLOPs", "moves no bytes"),
    )
    return placed.reset_index(drop=True), skipped.reset_index(drop=True)


def _hover(df: pd.DataFrame) -> list[str]:
    return [
        f"<b>{r.name}</b> ({r.phase}, ×{r.count})<br>"
        f"FLOPs {fmt_flops(r.flops)}<br>bytes {fmt_bytes(r.bytes)}<br>"
        f"intensity {r.intensity:,.2f} FLOP/byte<br>"
        f"attained {r.attained_flops_per_s / TERA:,.3g} TFLOP/s<br>"
        f"time {fmt_time(r.time_s)} ({r.share * 100:.1f} % of the {r.phase} step)<br>"
        f"{r.bound}-bound, computes in {r.compute_dtype}"
        for r in df.itertuples()
    ]


def _ceilings(gpu: GPUSpec) -> list[tuple[str, float]]:
    """(dtypes, peak FLOP/s) from lowest to highest, dtypes sharing a peak named together."""
    by_peak: dict[float, list[str]] = {}
    for dtype, peak in gpu.peak_flops_per_s.items():
        by_peak.setdefault(peak, []).append(dtype)
    return [("/".join(names), peak) for peak, names in sorted(by_peak.items())]


def _roof(gpu: GPUSpec, x_lo: float, x_hi: float) -> list[dict[str, Any]]:
    traces: list[dict[str, Any]] = []
    bw = gpu.hbm_bytes_per_s
    ceilings = _ceilings(gpu)
    top = ceilings[-1][1]
    traces.append(
        dict(
            type="scatter",
            x=[x_lo, top / bw],
            y=[x_lo * bw / TERA, top / TERA],
            mode="lines",
            line={"color": "black", "width": 2},
            name=f"HBM roof {bw / 1e12:.2f} TB/s",
            hoverinfo="skip",
        )
    )
    ridge_x, ridge_y, ridge_text = [], [], []
    for dtypes, peak in ceilings:
        ridge = peak / bw
        traces.append(
            dict(
                type="scatter",
                x=[ridge, x_hi],
                y=[peak / TERA, peak / TERA],
                mode="lines",
                line={"color": "black", "width": 1, "dash": "dot"},
                showlegend=False,
                hoverinfo="skip",
            )
        )
        ridge_x.append(ridge)
        ridge_y.append(peak / TERA)
        ridge_text.append(
            f"{dtypes}: ridge {ridge:,.0f} FLOP/byte, peak {peak / TERA:,.0f} TFLOP/s"
        )
    traces.append(
        dict(
            type="scatter",
            x=ridge_x,
            y=ridge_y,
            mode="markers+text",
            # Labels sit left of each ridge point, above the memory roof, where no operator can be.
            text=[f"{dtypes} {peak / TERA:,.0f} TFLOP/s  " for dtypes, peak in ceilings],
            textposition="middle left",
            textfont={"color": "black", "size": 11},
            marker={"symbol": "x-thin", "size": 10, "line": {"width": 2, "color": "black"}},
            name="ridge points",
            hovertext=ridge_text,
            hoverinfo="text",
        )
    )
    return traces


def roofline_figure(
    gpu: GPUSpec,
    placed: pd.DataFrame,
    baseline: pd.DataFrame | None = None,
    title: str = "",
) -> go.Figure:
    """Log-log roofline with operators sized by their share of step time, coloured by bound."""
    intensities = [placed["intensity"]] + ([baseline["intensity"]] if baseline is not None else [])
    values = pd.concat(intensities) if intensities else pd.Series(dtype=float)
    max_ridge = max(gpu.peak_flops_per_s.values()) / gpu.hbm_bytes_per_s
    x_lo = min(0.1, float(values.min()) / 3) if len(values) else 0.1
    x_hi = max(10 * max_ridge, float(values.max()) * 3) if len(values) else 10 * max_ridge
    traces = _roof(gpu, x_lo, x_hi)
    if baseline is not None and len(baseline):
        traces.append(
            dict(
                type="scatter",
                x=baseline["intensity"],
                y=baseline["attained_flops_per_s"] / TERA,
                mode="markers",
                marker={
                    "symbol": [PHASE_SYMBOLS.get(p, "circle") + "-open" for p in baseline["phase"]],
                    "size": MIN_MARKER_PX + MAX_EXTRA_MARKER_PX * np.sqrt(baseline["share"]),
                    "color": BASELINE_COLOR,
                },
                name="baseline (pinned)",
                hovertext=["baseline: " + h for h in _hover(baseline)],
                hoverinfo="text",
            )
        )
    for (phase, bound), group in placed.groupby(["phase", "bound"], sort=True):
        traces.append(
            dict(
                type="scatter",
                x=group["intensity"],
                y=group["attained_flops_per_s"] / TERA,
                mode="markers",
                marker={
                    "symbol": PHASE_SYMBOLS.get(str(phase), "circle"),
                    "size": MIN_MARKER_PX + MAX_EXTRA_MARKER_PX * np.sqrt(group["share"]),
                    "color": BOUND_COLORS.get(str(bound), "grey"),
                    "line": {"width": 1, "color": "white"},
                },
                name=f"{phase}, {bound}-bound",
                hovertext=_hover(group),
                hoverinfo="text",
            )
        )
    layout = dict(
        **LAYOUT,
        title=title,
        height=560,
        xaxis={
            "type": "log",
            "dtick": 1,
            "title": "arithmetic intensity (FLOP/byte of HBM traffic)",
        },
        yaxis={"type": "log", "dtick": 1, "title": "attained performance (TFLOP/s)"},
        legend={"orientation": "h", "y": -0.15},
    )
    return go.Figure(data=traces, layout=layout)
