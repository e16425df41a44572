"""The HTML report holds the three figures and the summary table; files land atomically."""

from __future__ import annotations

import pandas as pd

from rooflens.validate.compare import join, summarize
from rooflens.validate.report import error_size_figure, parity_figure, roofline_figure, write_report

ROWS = pd.DataFrame(
    [{"op": "gemm", "m": m, "n": 4096, "k": 4096, "dtype": "bf16", "gpu": "a100-sxm-80gb",
      "impl": "t", "source": "t", "measured_s": t}
     for m, t in ((1, 25e-6), (64, 30e-6), (1024, 300e-6), (8192, 1.0e-3))]
)  # fmt: skip


def test_figures_have_parity_bands_and_rooflines():
    joined = join(ROWS)
    parity = parity_figure(joined, ("ideal", "calibrated"))
    dotted = [t for t in parity.data if getattr(t.line, "dash", None) == "dot"]
    assert len(dotted) == 4  # ±20 % on each of the two panels
    roof = roofline_figure(joined)
    assert any(t.name == "a100-sxm-80gb roofline" for t in roof.data)
    ridge_top = max(max(t.y) for t in roof.data if t.name.endswith("roofline"))
    assert abs(ridge_top - 312.0) < 1e-9  # TFLOP/s: the bf16 peak caps the roof
    errors = error_size_figure(joined)
    assert len(errors.data[0].x) == 4


def test_write_report(tmp_path):
    joined = join(ROWS)
    summary = summarize(joined)
    path = write_report(joined, summary, tmp_path, ("ideal", "calibrated"))
    html = path.read_text()
    assert html.count("plotly-graph-div") >= 3 and "calibrated_median" in html
    assert (tmp_path / "summary.csv").is_file()
