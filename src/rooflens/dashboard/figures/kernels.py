"""Kernel benchmark figure (issue 13): our Triton kernels against the torch call of the same
shape, from the committed `benchmarks/results/<gpu>/kernels.csv` (written by
`python -m benchmarks.kernels`). Left: speedup = torch time / Triton time per shape; right: the
fraction of the roofline max(FLOPs / peak, bytes / bandwidth) each call reached. The issue's
targets (`benchmarks/results/kernel_targets.yaml`) are drawn as horizontal marks per kernel.
Plain data in, one `go.Figure` out (built in one constructor call, as dashboard/figures/scaling.py
explains), no Streamlit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import yaml

from rooflens.dashboard.figures import LAYOUT

RESULTS = Path(__file__).resolve().parents[4] / "benchmarks" / "results"
TARGETS = RESULTS / "kernel_targets.yaml"
# Panel -> (column, axis title with its unit, axis type)
PANELS = {
    1: ("speedup", "speedup over torch (×, torch time / Triton time)", "log"),
    2: ("datasheet_fraction", "fraction of the datasheet roofline (%)", "linear"),
}
FRACTION_METRICS = ("roofline_fraction", "datasheet_fraction")
POINT_COLOR, TARGET_COLOR = "#4c78a8", "#d62728"


def load_kernel_results(root: Path = RESULTS) -> pd.DataFrame:
    """Every committed `<gpu>/kernels.csv` under `root` (empty frame when there is none)."""
    files = sorted(root.glob("*/kernels.csv")) if root.is_dir() else []
    if not files:
        return pd.DataFrame()
    return pd.concat([pd.read_csv(f) for f in files], ignore_index=True)


def load_kernel_targets(path: Path = TARGETS) -> list[dict[str, Any]]:
    return list(yaml.safe_load(path.read_text())["targets"]) if path.is_file() else []


def _scale(column: str) -> float:
    return 100.0 if column in FRACTION_METRICS else 1.0


def _hover(frame: pd.DataFrame) -> list[str]:
    shape_columns = ("m", "n", "k", "batch", "seq_len", "kv_len", "n_heads", "n_kv_heads",
                     "rows", "hidden")  # fmt: skip
    texts = []
    for _, row in frame.iterrows():
        shape = ", ".join(
            f"{c}={int(row[c])}" for c in shape_columns if c in row and pd.notna(row[c])
        )
        texts.append(
            f"{shape}<br>Triton {row['triton_s'] * 1e6:.1f} µs, torch {row['torch_s'] * 1e6:.1f} µs"
            f"<br>{row['roofline_fraction'] * 100:.0f} % of the roofs measured in the run"
        )
    return texts


def kernel_figure(frame: pd.DataFrame, targets: list[dict[str, Any]], gpu: str) -> go.Figure:
    """Two panels of per-shape points per kernel, with the targets that apply as red marks."""
    rows = frame[frame["gpu"] == gpu]
    kernels = sorted(rows["kernel"].unique())
    traces: list[dict[str, Any]] = []
    layout: dict[str, Any] = {**LAYOUT, "height": 440, "showlegend": False,
                              "title": f"Our Triton kernels vs torch on {gpu} (points: shapes; "
                                       "red marks: issue 13 targets)"}  # fmt: skip
    for panel, (column, title, axis_type) in PANELS.items():
        suffix = "" if panel == 1 else str(panel)
        domain = [0.0, 0.46] if panel == 1 else [0.54, 1.0]
        scale = _scale(column)
        traces.append({"type": "box", "x": rows["kernel"].tolist(),
                       "y": (rows[column] * scale).tolist(), "boxpoints": "all", "jitter": 0.4,
                       "pointpos": 0, "marker": {"color": POINT_COLOR, "size": 6},
                       "line": {"color": POINT_COLOR}, "fillcolor": "rgba(0,0,0,0)",
                       "text": _hover(rows), "name": column, "xaxis": f"x{suffix}",
                       "yaxis": f"y{suffix}",
                       "hovertemplate": "%{x}: %{y:.3g}<br>%{text}<extra></extra>"})  # fmt: skip
        marks = [t for t in targets if t["kernel"] in kernels and t["metric"] == column]
        traces.append({"type": "scatter", "mode": "markers",
                       "x": [t["kernel"] for t in marks], "y": [t["value"] * scale for t in marks],
                       "text": [t["text"] for t in marks], "name": f"{column} targets",
                       "marker": {"symbol": "line-ew", "size": 44, "color": TARGET_COLOR,
                                  "line": {"width": 3, "color": TARGET_COLOR}},
                       "xaxis": f"x{suffix}", "yaxis": f"y{suffix}",
                       "hovertemplate": "target: %{text}<extra></extra>"})  # fmt: skip
        layout[f"xaxis{suffix}"] = {"domain": domain, "categoryorder": "array",
                                    "categoryarray": kernels, "anchor": f"y{suffix}"}  # fmt: skip
        layout[f"yaxis{suffix}"] = {"title": title, "type": axis_type, "anchor": f"x{suffix}"}
    # speedup = 1: as fast as torch
    layout["shapes"] = [{"type": "line", "xref": "x domain", "yref": "y", "x0": 0, "x1": 1,
                         "y0": 1, "y1": 1, "line": {"dash": "dot", "color": "grey"}}]  # fmt: skip
    return go.Figure(data=traces, layout=layout)
