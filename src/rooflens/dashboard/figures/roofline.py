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

from rooflens.dashboard.figures import BASELINE_COLOR, BOUND_COLORS, LAYOUT, PHASE_SYMBOLS
from rooflens.dashboard.numbers import fmt_sig
from rooflens.hardware.spec import GPUSpec
from rooflens.io.units import fmt_bytes, fmt_flops, fmt_rate, fmt_time

TERA = 1e12
MIN_MARKER_PX, MAX_EXTRA_MARKER_PX = 7.0, 38.0
SAME_SPOT_DECADES, SAME_SPOT_NAMES = 0.02, 6  # within ±5 % on both axes; names listed at most
GUIDE_COLOR = "rgba(0,0,0,0.18)"
LABEL_GAP = 1.6  # ceilings closer than this ratio label on opposite sides of their lines


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
        np.where(
            skipped["kind"] == "host",
            "host launch overhead (eager: no FLOPs, no bytes)",
            np.where(skipped["flops"] <= 0, "moves data, no FLOPs", "moves no bytes"),
        ),
    )
    return placed.reset_index(drop=True), skipped.reset_index(drop=True)


def _hover(df: pd.DataFrame, everyone: pd.DataFrame | None = None) -> list[str]:
    """Each operator's costs; where others sit on the same spot (decode GEMMs at one batch all
    share an intensity), they are named too, since a marker can hide the ones under it."""
    spots = _same_spot(df, df if everyone is None else everyone)
    columns = ("name", "phase", "count", "flops", "bytes", "intensity", "attained_flops_per_s",
               "time_s", "share", "bound", "compute_dtype")  # fmt: skip
    return [
        f"<b>{name}</b> ({phase}, ×{count} per step)<br>"
        f"FLOPs {fmt_flops(flops)}<br>bytes {fmt_bytes(nbytes)}<br>"
        f"intensity {fmt_sig(intensity, 'FLOP/byte')}<br>"
        f"attained {fmt_sig(attained / TERA, 'TFLOP/s')}<br>"
        f"time {fmt_time(time_s)} ({fmt_sig(share * 100, '%')} of the {phase} step)<br>"
        f"{bound}-bound, computes in {dtype}" + spot
        for (
            name,
            phase,
            count,
            flops,
            nbytes,
            intensity,
            attained,
            time_s,
            share,
            bound,
            dtype,
        ), spot in zip(zip(*(df[c].tolist() for c in columns), strict=True), spots, strict=True)
    ]


def _same_spot(df: pd.DataFrame, everyone: pd.DataFrame) -> list[str]:
    """'<br>same spot: a (decode, 48.7 %), …' for the operators within SAME_SPOT_DECADES of each
    row on both log axes (the row itself left out). Plain arrays: a frame lookup per row costs
    a millisecond."""
    x = np.log10(everyone["intensity"].to_numpy(float))
    y = np.log10(everyone["attained_flops_per_s"].to_numpy(float))
    keys = list(zip(everyone["name"], everyone["phase"], strict=True))
    labels = [
        f"{name} ({phase}, {fmt_sig(share * 100, '%')})"
        for (name, phase), share in zip(keys, everyone["share"], strict=True)
    ]
    rows_x = np.log10(df["intensity"].to_numpy(float))
    rows_y = np.log10(df["attained_flops_per_s"].to_numpy(float))
    out = []
    for key, rx, ry in zip(zip(df["name"], df["phase"], strict=True), rows_x, rows_y, strict=True):
        near = (np.abs(x - rx) < SAME_SPOT_DECADES) & (np.abs(y - ry) < SAME_SPOT_DECADES)
        others = [labels[i] for i in np.flatnonzero(near) if keys[i] != key]
        shown = others[:SAME_SPOT_NAMES] + (["…"] if len(others) > SAME_SPOT_NAMES else [])
        out.append("<br>same spot: " + ", ".join(shown) if others else "")
    return out


def _ceilings(gpu: GPUSpec) -> list[tuple[str, float]]:
    """(dtypes, peak FLOP/s) from lowest to highest, dtypes sharing a peak named together."""
    by_peak: dict[float, list[str]] = {}
    for dtype, peak in gpu.peak_flops_per_s.items():
        by_peak.setdefault(peak, []).append(dtype)
    return [("/".join(names), peak) for peak, names in sorted(by_peak.items())]


def _tflops(peak_flops_per_s: float) -> str:
    """A datasheet peak as quoted: '1,979', '67', '30.3' (whole TFLOP/s from 100 up)."""
    tflops = peak_flops_per_s / TERA
    return f"{tflops:,.0f}" if tflops >= 100 else fmt_sig(tflops)


def _line(x: list[float], y: list[float], **style: Any) -> dict[str, Any]:
    return dict(type="scatter", x=x, y=y, mode="lines", hoverinfo="skip", **style)


def _roof(gpu: GPUSpec, x_lo: float, x_hi: float) -> list[dict[str, Any]]:
    """The HBM slope, one ceiling per distinct peak (drawn from its ridge point rightwards, with
    a faint guide leftwards to its label), and the ridge points.

    Labels sit at the left edge above their ceiling's guide: left of a ridge point and above the
    memory slope no operator can be (attained ≤ intensity × bandwidth), so no label hides one.
    """
    bw = gpu.hbm_bytes_per_s
    ceilings = _ceilings(gpu)
    top = ceilings[-1][1]
    traces = [
        _line([x_lo, top / bw], [x_lo * bw / TERA, top / TERA],
              line={"color": "black", "width": 2}, name=f"HBM roof {fmt_rate(bw, 'B/s')}"),
    ]  # fmt: skip
    label_y: list[float] = []
    label_text: list[str] = []
    positions: list[str] = []
    for dtypes, peak in ceilings:
        ridge = peak / bw
        traces.append(_line([ridge, x_hi], [peak / TERA] * 2, showlegend=False,
                            line={"color": "black", "width": 1.2, "dash": "dot"}))  # fmt: skip
        traces.append(_line([x_lo, ridge], [peak / TERA] * 2, showlegend=False,
                            line={"color": GUIDE_COLOR, "width": 1, "dash": "dot"}))  # fmt: skip
        # a ceiling within LABEL_GAP of the one below puts its label under its line
        close = bool(label_y) and peak / TERA < label_y[-1] * LABEL_GAP
        positions.append("bottom right" if close else "top right")
        label_y.append(peak / TERA)
        label_text.append(f"{dtypes}: {_tflops(peak)} TFLOP/s, ridge {fmt_sig(ridge, 'FLOP/byte')}")
    traces.append(
        dict(type="scatter", x=[x_lo] * len(label_y), y=label_y, mode="text", text=label_text,
             textposition=positions, textfont={"color": "black", "size": 12},
             showlegend=False, hoverinfo="skip", name="ceilings")
    )  # fmt: skip
    traces.append(
        dict(
            type="scatter",
            x=[peak / bw for _, peak in ceilings],
            y=[peak / TERA for _, peak in ceilings],
            mode="markers",
            marker={"symbol": "x-thin", "size": 11, "line": {"width": 2.5, "color": "black"}},
            name="ridge points",
            hovertext=label_text,
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
                hovertext=_hover(group, placed),
                hoverinfo="text",
            )
        )
    attained = [placed["attained_flops_per_s"]] + (
        [baseline["attained_flops_per_s"]] if baseline is not None else []
    )
    y_lo = min([x_lo * gpu.hbm_bytes_per_s, *(float(a.min()) for a in attained if len(a))]) / 2
    y_hi = max(gpu.peak_flops_per_s.values()) * 2.5  # room for the top ceiling's label
    layout = dict(
        **LAYOUT,
        title=title,
        height=600,
        xaxis={
            "type": "log",
            "dtick": 1,
            "range": [np.log10(x_lo), np.log10(x_hi)],
            "title": "arithmetic intensity (FLOP/byte of HBM traffic)",
        },
        yaxis={
            "type": "log",
            "dtick": 1,
            "range": [np.log10(y_lo / TERA), np.log10(y_hi / TERA)],
            "title": "attained performance (TFLOP/s)",
        },
        legend={"orientation": "h", "y": -0.13},
    )
    return go.Figure(data=traces, layout=layout)
