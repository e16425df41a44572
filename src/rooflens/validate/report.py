"""Plotly figures of measured vs predicted, and the HTML report (`rooflens validate report`).

Three views of a joined table (validate/compare.py): measured against predicted on log-log axes
with the ±20 % band around parity, one panel per profile; the roofline of each GPU with the
measured points (achieved FLOP/s against arithmetic intensity; Williams et al. 2009); and the
calibrated error against problem size (the ideal time, so memory- and compute-bound rows share
one axis). Large tables are sampled per operator class so a figure stays light.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from rooflens.hardware.presets import get_gpu
from rooflens.io.files import atomic_write_csv, atomic_write_text

BAND = 0.2
MAX_POINTS_PER_CLASS = 2500
# One colour per operator class, one marker per GPU: a (GPU, class) series never repeats the
# look of another, where plotly's ten-colour cycle repeated by the eleventh of 15 (issue 26 §4).
OP_COLORS = qualitative.Dark24
GPU_SYMBOLS = ("circle", "diamond", "square", "triangle-up", "x", "cross", "star", "hexagon",
               "triangle-down", "pentagon")  # fmt: skip
GPU_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def series_style(data: pd.DataFrame) -> dict[tuple[str, str], dict[str, str]]:
    """(GPU, operator class) -> its marker colour and symbol: colour by class, symbol by GPU."""
    ops = sorted(str(o) for o in data["op"].unique())
    gpus = sorted(str(g) for g in data["gpu"].unique())
    return {
        (gpu, op): {"color": OP_COLORS[i % len(OP_COLORS)],
                    "symbol": GPU_SYMBOLS[j % len(GPU_SYMBOLS)]}
        for j, gpu in enumerate(gpus) for i, op in enumerate(ops)
    }  # fmt: skip


def _sample(joined: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    kept = joined[~joined["below_ideal"]]
    parts = [g.sample(min(len(g), MAX_POINTS_PER_CLASS), random_state=seed)
             for _, g in kept.groupby(["gpu", "op"])]  # fmt: skip
    return pd.concat(parts) if parts else kept


def parity_figure(joined: pd.DataFrame, profiles: Sequence[str]) -> go.Figure:
    """Measured vs predicted seconds, log-log, parity line and ±20 % band, per profile."""
    data = _sample(joined)
    fig = make_subplots(
        rows=1, cols=len(profiles), subplot_titles=[f"{p} profile" for p in profiles]
    )
    lo = float(min(data["measured_s"].min(), *(data[f"predicted_{p}_s"].min() for p in profiles)))
    hi = float(max(data["measured_s"].max(), *(data[f"predicted_{p}_s"].max() for p in profiles)))
    line = np.geomspace(lo, hi, 50)
    style = series_style(data)
    for col, profile in enumerate(profiles, start=1):
        for (gpu, op), g in data.groupby(["gpu", "op"]):
            fig.add_trace(go.Scattergl(
                x=g["measured_s"] * 1e6, y=g[f"predicted_{profile}_s"] * 1e6, mode="markers",
                marker={"size": 5, "opacity": 0.6, **style[(str(gpu), str(op))]},
                name=f"{gpu} {op}", legendgroup=f"{gpu} {op}",
                showlegend=col == 1,
                hovertemplate="measured %{x:.3g} µs<br>predicted %{y:.3g} µs",
            ), row=1, col=col)  # fmt: skip
        for scale, dash in ((1.0, "solid"), (1 + BAND, "dot"), (1 - BAND, "dot")):
            parity = go.Scatter(x=line * 1e6, y=line * scale * 1e6, mode="lines",
                                line={"color": "black", "dash": dash, "width": 1},
                                showlegend=False, hoverinfo="skip")  # fmt: skip
            fig.add_trace(parity, row=1, col=col)
        fig.update_xaxes(type="log", title_text="measured time per call (µs)", row=1, col=col)
        fig.update_yaxes(type="log", title_text="predicted time per call (µs)", row=1, col=col)
    fig.update_layout(title="Measured vs predicted (dotted: ±20 %)", height=550)
    return fig


def roofline_figure(joined: pd.DataFrame) -> go.Figure:
    """Achieved FLOP/s vs FLOP/byte with each GPU's roofline (dense peak of the rows' dtype)."""
    data = _sample(joined)
    data = data[(data["flops"] > 0) & (data["bytes"] > 0)]
    fig = go.Figure()
    style = series_style(data)
    for k, (gpu_id, g) in enumerate(data.groupby("gpu")):
        gpu = get_gpu(str(gpu_id))
        intensity = g["flops"] / g["bytes"]
        for op, h in g.groupby("op"):
            fig.add_trace(go.Scattergl(
                x=intensity[h.index], y=h["flops"] / h["measured_s"] / 1e12, mode="markers",
                marker={"size": 5, "opacity": 0.6, **style[(str(gpu_id), str(op))]},
                name=f"{gpu_id} {op}",
            ))  # fmt: skip
        peak = max(gpu.peak(str(d)) for d in g["compute_dtype"].unique())
        x = np.geomspace(max(float(intensity.min()), 1e-2), float(intensity.max()) * 2, 100)
        roof = np.minimum(peak, x * gpu.hbm_bytes_per_s) / 1e12
        fig.add_trace(go.Scatter(x=x, y=roof, mode="lines", name=f"{gpu_id} roofline",
                                 line={"width": 2, "color": "black",
                                       "dash": GPU_DASHES[k % len(GPU_DASHES)]}))  # fmt: skip
    fig.update_xaxes(type="log", title_text="arithmetic intensity (FLOP/byte)")
    fig.update_yaxes(type="log", title_text="achieved TFLOP/s")
    fig.update_layout(title="Roofline with measured points", height=550)
    return fig


def error_size_figure(joined: pd.DataFrame, profile: str = "calibrated") -> go.Figure:
    """Signed error of a profile against the ideal time (problem size), log x."""
    data = _sample(joined)
    fig = go.Figure()
    style = series_style(data)
    for (gpu, op), g in data.groupby(["gpu", "op"]):
        fig.add_trace(go.Scattergl(
            x=g["predicted_ideal_s"] * 1e6, y=g[f"error_{profile}"] * 100, mode="markers",
            marker={"size": 5, "opacity": 0.6, **style[(str(gpu), str(op))]},
            name=f"{gpu} {op}",
        ))  # fmt: skip
    for level in (-100 * BAND, 0.0, 100 * BAND):
        fig.add_hline(y=level, line={"color": "black", "dash": "solid" if level == 0 else "dot"})
    fig.update_xaxes(type="log", title_text="problem size: ideal time per call (µs)")
    fig.update_yaxes(title_text=f"{profile} error (%): predicted / measured − 1")
    fig.update_layout(title=f"Error of the {profile} profile vs problem size", height=500)
    return fig


def write_report(
    joined: pd.DataFrame, summary: pd.DataFrame, out_dir: Path, profiles: Sequence[str]
) -> Path:
    """report.html (figures and the summary table) and summary.csv, written atomically."""
    figures = [parity_figure(joined, profiles), roofline_figure(joined)]
    figures.append(error_size_figure(joined, profiles[-1]))
    parts = [f.to_html(full_html=False, include_plotlyjs=(i == 0)) for i, f in enumerate(figures)]
    table = summary.to_html(index=False, float_format=lambda v: f"{v:.4g}", border=0)
    html = (
        "<!doctype html><html><head><meta charset='utf-8'><title>rooflens validation</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{padding:4px 10px;text-align:right}</style></head><body>"
        "<h1>rooflens: measured vs predicted kernels</h1>"
        "<p>Errors are predicted / measured − 1; statistics leave out rows measured faster than "
        "the ideal roofline (cache effects) and count them.</p>"
        f"{table}{''.join(parts)}</body></html>"
    )
    atomic_write_csv(out_dir / "summary.csv", summary)
    return atomic_write_text(out_dir / "report.html", html)
