"""rooflens dashboard: `streamlit run app.py`.

Thin by design (DESIGN.md): the sidebar's widgets become `dashboard.settings.Settings`, the chosen
page asks `model/` (and `validate/`) through `dashboard.compute` and draws plotly figures. Bad
input never blanks the page: a setting the model rejects is reported beside its widget (in the
widget's words) while the page keeps showing the last valid scenario; an error a page's own
control causes is reported on the page, under its title.
"""

from __future__ import annotations

import streamlit as st

from rooflens.dashboard import style
from rooflens.dashboard.compute import UPLOAD_DIR
from rooflens.dashboard.controls import sidebar
from rooflens.dashboard.links import write_url
from rooflens.dashboard.views import PAGES
from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import files_limited_to

st.set_page_config(page_title="rooflens", page_icon="📐", layout="wide")
style.apply()
with files_limited_to(UPLOAD_DIR):  # a server opens no file but presets and uploads
    page, ctx = sidebar(list(PAGES), {key: title for key, (title, _) in PAGES.items()})
    for problem in ctx.problems:
        st.warning(problem)
    if ctx.invalid and ctx.settings is ctx.typed:  # nothing valid yet to show
        st.header(PAGES[page][0])
        st.info(f"Fix the setting marked in the sidebar to see this page: {ctx.invalid}")
    else:
        if ctx.invalid:
            st.warning(
                "Showing the last valid scenario; the sidebar's current one is invalid: "
                f"{ctx.invalid}"
            )
        try:
            PAGES[page][1](ctx)
        except RooflensError as exc:
            st.error(f"error: {exc}")
    write_url(page, ctx)
