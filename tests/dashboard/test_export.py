"""Exports: every page offers its table or result for download, figures export as standalone
HTML (plotly.js inlined, so the file opens offline) and, where kaleido can drive a local
Chromium, as PNG."""

from __future__ import annotations

import pytest

from rooflens.dashboard import sweeps
from rooflens.dashboard.export import figure_html, figure_png, png_export_available, to_json
from rooflens.dashboard.figures.memory import memory_bars
from rooflens.dashboard.settings import DEFAULTS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("page", "files"),
    [
        ("explore", {"rooflens-prediction.csv", "rooflens-prediction.json"}),
        ("roofline", {"rooflens-roofline.csv", "rooflens-roofline.html"}),
        ("memory", {"rooflens-memory.json", "rooflens-max-batch.csv", "rooflens-memory.html"}),
        ("scaling", {"rooflens-batch-sweep.csv"}),
    ],
)
def test_pages_offer_their_downloads(app, page: str, files: set[str]) -> None:  # type: ignore[no-untyped-def]
    at = app(page=page)
    offered = {button.key.removeprefix("dl-") for button in at.get("download_button")}
    assert files <= offered


def test_figure_html_is_standalone() -> None:
    fig = memory_bars([("now", sweeps.predict(DEFAULTS).memory)])
    html = figure_html(fig)
    assert "<html>" in html[:100] and "plotly.js" in html.lower()
    assert len(html) > 1_000_000  # plotly.js itself is inlined, no CDN needed
    assert "KV cache" in html


def test_json_export_handles_numpy_scalars() -> None:
    import numpy as np

    assert to_json({"x": np.float64(1.5), "n": np.int64(3)}) == '{\n  "x": 1.5,\n  "n": 3\n}'


@pytest.mark.browser
def test_figure_png_through_headless_chromium() -> None:
    if not png_export_available():
        pytest.skip("PNG export needs kaleido and a Chromium on PATH; HTML export is offered")
    png = figure_png(memory_bars([("now", sweeps.predict(DEFAULTS).memory)]))
    assert png.startswith(PNG_MAGIC) and len(png) > 10_000
