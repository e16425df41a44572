"""Validation charts the validator's report lacks: median and p90 error by operator class and GPU,
per profile, against the ±20 % band; and the leave-one-GPU-out cross-validation (validate/cv.py)
as a GPU × class heatmap. (Parity and roofline figures come from validate.report; `as_svg`
draws them without WebGL.)"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from rooflens.dashboard.figures import HEATMAP_TEXT_PX, LAYOUT

BAND = 0.20


def as_svg(fig: go.Figure) -> go.Figure:
    """The same figure with its WebGL scatters (`scattergl`) drawn as SVG scatters: a page of a
    few thousand points draws faster in SVG than a browser without a GPU creates one WebGL
    context per chart (~0.2–0.4 s each in headless Chromium)."""
    spec = fig.to_dict()
    for trace in spec["data"]:
        if trace.get("type") == "scattergl":
            trace["type"] = "scatter"
    return go.Figure(spec)


def error_figure(summary: pd.DataFrame, profiles: tuple[str, ...]) -> go.Figure:
    labels = [f"{g} {o}" for g, o in zip(summary["gpu"], summary["op"], strict=True)]
    traces = [
        {"type": "bar", "x": labels, "y": (summary[f"{p}_median"] * 100).tolist(),
         "name": f"{p}: median |error| (%)",
         "error_y": {"type": "data", "symmetric": False,
                     "array": ((summary[f"{p}_p90"] - summary[f"{p}_median"]) * 100).tolist(),
                     "arrayminus": [0] * len(summary)},
         "hovertemplate": "%{x}: median %{y:.1f} %<extra>" + p + "</extra>"}
        for p in profiles
    ]  # fmt: skip
    shapes = [{"type": "line", "x0": 0, "x1": 1, "xref": "paper", "y0": BAND * 100,
               "y1": BAND * 100, "line": {"dash": "dash", "color": "grey"}}]  # fmt: skip
    layout = {**LAYOUT, "barmode": "group", "height": 420, "shapes": shapes,
              "title": "Error by operator class and GPU (bars: median, whiskers: p90)",
              "yaxis": {"title": "|predicted / measured − 1| (%)"}}  # fmt: skip
    return go.Figure(data=traces, layout=layout)


def cv_figure(cv: pd.DataFrame) -> go.Figure:
    """Held-out GPU × operator class (GEMMs also per precision: `gemm/fp8`, ...), over every
    engine's calls: colour = median |error| (%), text = median / p90 (%). Cells whose class had
    no training rows (only the held-out GPU measured it) are marked."""
    if "engine" in cv.columns:
        cv = cv[cv["engine"] == "all"]
    cells = cv[~cv["op"].str.contains("/") | cv["op"].str.startswith("gemm/")]
    gpus, ops = sorted(cells["held_out"].unique()), sorted(cells["op"].unique())
    grid = cells.set_index(["held_out", "op"])
    z, text = [], []
    for gpu in gpus:
        z_row: list[float | None] = []
        text_row: list[str] = []
        for op in ops:
            if (gpu, op) not in grid.index:
                z_row.append(None)
                text_row.append("")
                continue
            cell = grid.loc[(gpu, op)]
            z_row.append(float(cell["median"]) * 100)
            note = "" if cell["trained_rows"] > 0 else " *"  # the title says what * means
            text_row.append(f"{cell['median'] * 100:.0f} / {cell['p90'] * 100:.0f}{note}")
        z.append(z_row)
        text.append(text_row)
    # a fixed text size: left to itself plotly shrinks a cell's text to fit it (7 px)
    trace = {"type": "heatmap", "x": ops, "y": gpus, "z": z, "text": text,
             "texttemplate": "%{text}", "textfont": {"size": HEATMAP_TEXT_PX},
             "colorscale": "RdYlGn", "reversescale": True,
             "zmin": 0, "zmax": 50, "colorbar": {"title": "median |error| (%)"},
             "hovertemplate": "held out %{y}, %{x}: median / p90 %{text} %<extra></extra>",
             }  # fmt: skip
    layout = {**LAYOUT, "height": 140 + 60 * len(gpus),
              "title": "Held-out GPU: median / p90 |predicted / measured − 1| (%); * the class "
                       "has no training rows",
              "xaxis": {"title": "operator class"},
              "yaxis": {"title": "GPU left out of the fit"}}  # fmt: skip
    return go.Figure(data=[trace], layout=layout)
