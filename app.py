"""rooflens dashboard: `streamlit run app.py`.

Thin by design (DESIGN.md): the sidebar's widgets become `dashboard.settings.Settings`, the chosen
page asks `model/` (and `validate/`) through `dashboard.compute` and draws plotly figures. Bad
input shows its one-line `RooflensError` message instead of the page.
"""

from __future__ import annotations

import streamlit as st

from dashboard.compute import UPLOAD_DIR
from dashboard.controls import sidebar, write_url
from dashboard.views import PAGES
from hardware.errors import RooflensError
from hardware.presets import files_limited_to

st.set_page_config(page_title="rooflens", page_icon="📐", layout="wide")
with files_limited_to(UPLOAD_DIR):  # a server opens no file but presets and uploads
    page, ctx = sidebar(list(PAGES), {key: title for key, (title, _) in PAGES.items()})
    for problem in ctx.problems:
        st.warning(problem)
    try:
        PAGES[page][1](ctx)
    except RooflensError as exc:
        st.error(f"error: {exc}")
    write_url(page, ctx)
