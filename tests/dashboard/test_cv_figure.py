"""The Validation page's cross-validation heatmap (dashboard/figures/validation.py `cv_figure`):
cells carry the table's median and p90 in percent, subsets and missing cells stay out, and the
page draws the committed `rooflens validate cv` table."""

from __future__ import annotations

import pandas as pd
import pytest
from apptest_helpers import assert_clean, figures

from rooflens.dashboard.figures.validation import cv_figure
from rooflens.validate.cv import CV_FILE


def test_heatmap_cells_are_the_tables_median_and_p90_in_percent() -> None:
    cv = pd.DataFrame({"held_out": ["a40", "a40", "h100-sxm", "h100-sxm"],
                       "op": ["gemm", "norm", "gemm", "moe/tuned"],
                       "trained_rows": [10, 0, 10, 10], "median": [0.072, 0.29, 0.088, 0.5],
                       "p90": [0.179, 0.44, 0.289, 0.9]})  # fmt: skip
    fig = cv_figure(cv)
    trace = fig.data[0]
    assert list(trace.y) == ["a40", "h100-sxm"] and list(trace.x) == ["gemm", "norm"]
    assert trace.z[0][0] == pytest.approx(7.2) and trace.z[1][0] == pytest.approx(8.8)
    assert trace.z[1][1] is None  # H100 norm not in the table: no cell, no made-up number
    assert trace.text[0][0] == "7 / 18" and trace.text[1][0] == "9 / 29"
    assert trace.text[0][1] == "29 / 44 *" and "* the class has no training rows" in (
        fig.layout.title.text
    )
    assert trace.textfont.size >= 12  # issue 26 §4: a fixed size, never shrunk to 7 px


def test_gemm_precisions_get_columns_of_their_own() -> None:
    # a GEMM's precision subset is a kernel family of its own (gemm/fp8), a config subset of
    # fused MoE (moe/tuned) is not a class
    cv = pd.DataFrame({"held_out": ["b300"] * 3, "op": ["gemm", "gemm/fp8", "moe/tuned"],
                       "trained_rows": [10, 10, 10], "median": [0.1, 0.2, 0.3],
                       "p90": [0.2, 0.4, 0.6]})  # fmt: skip
    assert list(cv_figure(cv).data[0].x) == ["gemm", "gemm/fp8"]


def test_validation_page_draws_the_committed_cross_validation(app) -> None:  # type: ignore[no-untyped-def]
    at = app(page="validation", vsection="held-out GPU")
    assert_clean(at)
    heatmaps = [f for f in figures(at) if f["data"][0].get("type") == "heatmap"]
    assert len(heatmaps) == 1
    committed = pd.read_csv(CV_FILE)
    assert sorted(heatmaps[0]["data"][0]["y"]) == sorted(committed["held_out"].unique())
    assert any("Accuracy on a GPU nobody has measured" in s.value for s in at.subheader)
