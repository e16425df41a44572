"""Downloads: tables as CSV (SI units, the unit in each column name), results as JSON, figures as
self-contained HTML, and as PNG where kaleido can drive a local Chromium.

Files are built only when their button is clicked (Streamlit calls a `data` callable then), so
exporting costs nothing on ordinary reruns.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


@cache
def png_export_available() -> bool:
    """kaleido is installed and a Chromium/Chrome it can drive is on PATH."""
    return importlib.util.find_spec("kaleido") is not None and any(
        shutil.which(b) for b in BROWSERS
    )


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, default=_json_default)


def figure_html(fig: go.Figure) -> str:
    """A standalone page with plotly.js inlined: opens offline."""
    return str(fig.to_html(include_plotlyjs=True, full_html=True))


def figure_png(fig: go.Figure) -> bytes:
    return bytes(fig.to_image(format="png", width=1400, height=800, scale=1))


def download_row(
    stem: str,
    *,
    frame: pd.DataFrame | None = None,
    data: Any = None,
    fig: go.Figure | None = None,
) -> None:
    """One row of download buttons for a table, a JSON document and/or a figure."""
    buttons: list[tuple[str, Any, str, str]] = []
    if frame is not None:
        buttons.append(("CSV", lambda: frame.to_csv(index=False), f"{stem}.csv", "text/csv"))
    if data is not None:  # a document, or a callable building it when the button is clicked
        document = data if callable(data) else (lambda: data)
        buttons.append(("JSON", lambda: to_json(document()), f"{stem}.json", "application/json"))
    if fig is not None:
        buttons.append(("Figure (HTML)", lambda: figure_html(fig), f"{stem}.html", "text/html"))
        if png_export_available():
            buttons.append(("Figure (PNG)", lambda: figure_png(fig), f"{stem}.png", "image/png"))
    if not buttons:
        return
    row = st.container(horizontal=True, gap="small")  # side by side, left-aligned
    for label, make, name, mime in buttons:
        row.download_button(
            f"⬇ {label}", make, file_name=name, mime=mime, key=f"dl-{name}", on_click="ignore"
        )
