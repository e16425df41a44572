"""The page's few style rules, sent once per run: text in a metric tile wraps instead of being
cut with an ellipsis ("Memory per GPU: 37.7 GB of 85.5 …", "Cost per M outp…" at 1400 px;
issue 26 §4), and so do the headers of static tables. tests/dashboard/test_browser.py checks,
in Chromium at 1400 and 1920 px, that no tile, header or chart label on any page is clipped."""

from __future__ import annotations

import streamlit as st

CSS = """
<style>
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] *,
[data-testid="stMetricValue"], [data-testid="stMetricValue"] *,
[data-testid="stTable"] th, [data-testid="stTable"] th * {
  white-space: normal !important;
  overflow: visible !important;
  text-overflow: clip !important;
  overflow-wrap: break-word;
}
[data-testid="stMetricValue"] { font-size: 1.75rem; line-height: 1.2; }
</style>
"""


def apply() -> None:
    st.html(CSS)
