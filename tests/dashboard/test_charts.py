"""Charts are drawn with their own template (dashboard/charts.py), not Streamlit's browser-side
theme: every chart a page sends has no theme, and its template carries real colours (the
Streamlit template's colours are placeholders only its browser-side theme replaces)."""

from __future__ import annotations

import json

import plotly.io as pio
import pytest
from apptest_helpers import assert_clean

from rooflens.dashboard.charts import CATEGORICAL, TEMPLATE


@pytest.mark.parametrize("page", ["explore", "roofline", "memory", "optimizations"])
def test_pages_send_charts_with_their_own_template(app, page: str) -> None:  # type: ignore[no-untyped-def]
    at = app(page=page)
    assert_clean(at)
    charts = list(at.get("plotly_chart"))
    assert charts
    for chart in charts:
        assert chart.proto.theme == ""  # theme=None: no theming in the browser
        layout = json.loads(chart.proto.spec)["layout"]
        assert layout["template"]["layout"]["colorway"] == list(CATEGORICAL)
        assert layout["template"]["layout"]["font"]["family"].startswith('"Source Sans"')


def test_the_template_is_the_default_and_uses_no_placeholder_colours() -> None:
    assert pio.templates.default == TEMPLATE
    streamlit_colors = pio.templates["streamlit"].layout.colorway
    assert all(c.startswith("#0000") for c in streamlit_colors)  # placeholders, as said above
    assert not set(pio.templates[TEMPLATE].layout.colorway) & set(streamlit_colors)
