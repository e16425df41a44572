"""Plotly figure builders: plain data (frames, specs) in, a `go.Figure` out, no Streamlit.

Every axis title and hover label carries its unit; values are converted from SI at this edge
only (ms, GB, TFLOP/s)."""

from __future__ import annotations

BOUND_COLORS = {"memory": "#1f77b4", "compute": "#d62728", "comm": "#2ca02c"}
PHASE_SYMBOLS = {"prefill": "circle", "decode": "diamond"}
BASELINE_COLOR = "rgba(120,120,120,0.55)"
# The look (template "rooflens") is set once in dashboard/charts.py, which the pages draw through.
LAYOUT = {"margin": {"l": 60, "r": 20, "t": 50, "b": 50}}
