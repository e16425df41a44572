"""The kernel benchmark figure (dashboard/figures/kernels.py) draws the committed CSV's numbers
and the issue's targets, with units; the Validation page shows it."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from apptest_helpers import REPO, assert_clean, figures

from rooflens.dashboard.figures.kernels import (
    kernel_figure,
    load_kernel_results,
    load_kernel_targets,
)

CSV = REPO / "benchmarks" / "results" / "h100-sxm" / "kernels.csv"


def test_points_are_the_csv_values_and_marks_the_yaml_targets() -> None:
    results = load_kernel_results()
    committed = pd.read_csv(CSV)
    assert len(results[results["gpu"] == "h100-sxm"]) == len(committed)
    targets = load_kernel_targets()
    fig = kernel_figure(results, targets, "h100-sxm")
    speed, speed_marks, fraction, fraction_marks = fig.data
    assert list(speed.y) == pytest.approx(committed["speedup"].tolist())
    assert list(fraction.y) == pytest.approx((committed["datasheet_fraction"] * 100).tolist())
    raw = yaml.safe_load((REPO / "benchmarks" / "results" / "kernel_targets.yaml").read_text())
    by_metric = {m: [t for t in raw["targets"] if t["metric"] == m]
                 for m in ("speedup", "datasheet_fraction")}  # fmt: skip
    assert list(speed_marks.y) == pytest.approx([t["value"] for t in by_metric["speedup"]])
    assert list(fraction_marks.y) == pytest.approx(
        [t["value"] * 100 for t in by_metric["datasheet_fraction"]]
    )
    assert "(×" in fig.layout.yaxis.title.text and "(%)" in fig.layout.yaxis2.title.text
    assert fig.layout.yaxis.type == "log"


def test_validation_page_shows_the_kernel_benchmark(app, measured_dir) -> None:  # type: ignore[no-untyped-def]
    at = app(page="validation", vsection="kernel benchmark")
    assert_clean(at)
    titles = [f["layout"].get("title", {}).get("text", "") for f in figures(at)]
    assert any("Triton kernels vs torch on h100-sxm" in t for t in titles)
