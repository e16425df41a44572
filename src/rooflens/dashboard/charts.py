"""How the pages draw a plotly figure: `show(fig, key=...)`, with the look set once here.

Streamlit's own chart theme (`theme="streamlit"`) is applied in the browser on every draw, and a
changed figure is drawn from scratch on each rerun (its element id hashes the spec): in headless
Chromium on this project's machine that theming cost ~40 ms of the ~60 ms a chart takes. The
pages therefore draw with `theme=None` and the figure's own template, "rooflens": white, with
Streamlit's font, text colours and categorical colours, titles at the left and axes that make
room for their labels (what the Streamlit theme did). Importing this module makes
"rooflens" plotly's default template, so every figure a page builds carries it.
"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st

from rooflens.dashboard.figures import SERIES_COLORS

# Streamlit's light theme (streamlit/elements/lib/streamlit_plotly_theme.py and its frontend)
TEXT, MUTED, GRID = "#31333F", "#808495", "#e6eaf1"
CATEGORICAL = SERIES_COLORS  # Streamlit's ten, then ten more (dashboard/figures)
LOOK = {
    "font": {"family": '"Source Sans", "Source Sans Pro", sans-serif', "color": TEXT, "size": 13},
    "title": {"x": 0.0, "xanchor": "left", "font": {"size": 16, "weight": "bold"}},
    "colorway": list(CATEGORICAL),
    "paper_bgcolor": "white",
    "plot_bgcolor": "white",
    "xaxis": {"automargin": True, "gridcolor": GRID, "zerolinecolor": GRID,
              "tickfont": {"color": MUTED}, "title": {"font": {"color": MUTED}}},
    "yaxis": {"automargin": True, "gridcolor": GRID, "zerolinecolor": GRID,
              "tickfont": {"color": MUTED}, "title": {"font": {"color": MUTED}}},
    "legend": {"font": {"color": TEXT}},
    "hoverlabel": {"bgcolor": "white", "font": {"color": TEXT}},
}  # fmt: skip
TEMPLATE = "rooflens"

if TEMPLATE not in pio.templates:
    # LOOK alone over plotly's built-in defaults (which are white): a full template such as
    # plotly_white carries settings for every trace and axis kind, and costs each draw ~15 ms
    pio.templates[TEMPLATE] = go.layout.Template(layout=LOOK)
pio.templates.default = TEMPLATE


def show(fig: go.Figure, *, key: str) -> None:
    """Draw `fig` across the page's width with its own template (no browser-side theming)."""
    st.plotly_chart(fig, key=key, theme=None)
