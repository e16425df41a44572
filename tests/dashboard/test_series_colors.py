"""Issue 26 §4: a chart of many series never gives two of them the same look (the Validation
page's 3 GPUs × 5 operator classes repeated plotly's ten colours), and heat-map text has a
readable, fixed size."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooflens.dashboard.figures import SERIES_COLORS
from rooflens.dashboard.figures.e2e import e2e_figure
from rooflens.validate.e2e.report import results_frame
from rooflens.validate.report import error_size_figure, parity_figure, roofline_figure

GPUS = ("a100-sxm-80gb", "h100-sxm", "a40")
OPS = ("gemm", "attention_prefill", "attention_decode", "norm", "elementwise")


def _joined() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for gpu in GPUS:
        for op in OPS:
            for _ in range(4):
                t = float(rng.uniform(1e-5, 1e-3))
                rows.append({"gpu": gpu, "op": op, "flops": 1e9, "bytes": 1e7, "measured_s": t,
                             "predicted_ideal_s": t / 2, "predicted_calibrated_s": t,
                             "error_calibrated": 0.0, "compute_dtype": "bf16",
                             "below_ideal": False})  # fmt: skip
    return pd.DataFrame(rows)


def _looks(fig) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    points = [t for t in fig.data if t.mode == "markers" and t.showlegend is not False]
    return [(t.marker.color, t.marker.symbol) for t in points]


def test_fifteen_gpu_class_series_each_look_different() -> None:
    joined = _joined()
    for fig in (roofline_figure(joined), parity_figure(joined, ("ideal", "calibrated")),
                error_size_figure(joined)):  # fmt: skip
        looks = _looks(fig)
        assert len(looks) == len(GPUS) * len(OPS) == len(set(looks))
        # colour says the class, the marker the GPU
        assert len({c for c, _ in looks}) == len(OPS) and len({s for _, s in looks}) == len(GPUS)


def test_a_whole_model_of_operators_gets_a_colour_each() -> None:
    names = [f"op{i}" for i in range(15)]
    ops = [{"name": n, "predicted_s": 1e-3, "measured_s": 1e-3} for n in names]
    step = {"predicted_s": 0.015, "measured_s": 0.015, "measured_q20_s": 0.015,
            "measured_q80_s": 0.015}  # fmt: skip
    rows = [{"phase": "decode", "batch": 1, "context": 64, "mode": "eager", **step, "ops": ops}]
    fig = e2e_figure(results_frame(rows, {"model": "m", "gpu": "h100-sxm"}), "decode")
    colors = [t.marker.color for t in fig.data]
    assert len(colors) == 15 == len(set(colors))
    assert len(SERIES_COLORS) == len(set(SERIES_COLORS)) >= 20
