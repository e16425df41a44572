"""Figure builders against closed forms: operators sit at or under the roofline min(peak,
I·bandwidth) (on it for GEMMs under the ideal profile), ceilings sit at datasheet peaks, memory
bars stack to the total, waterfall bars end at the full stack's value; and the headline cost."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dashboard import sweeps
from dashboard.figures.memory import memory_bars
from dashboard.figures.roofline import roofline_figure, roofline_points
from dashboard.figures.scaling import batch_figure
from dashboard.figures.waterfall import WATERFALL_METRICS, waterfall_figure
from dashboard.headline import Metric, usd_per_million_tokens
from dashboard.settings import DEFAULTS
from model.units import fmt_time


@pytest.fixture(scope="module")
def pred():  # type: ignore[no-untyped-def]
    return sweeps.predict(DEFAULTS)


def test_operators_sit_under_the_roof_and_gemms_on_it(pred) -> None:  # type: ignore[no-untyped-def]
    gpu = pred.scenario.gpu
    placed, skipped = roofline_points(pred.ops_frame())
    roof = np.minimum(
        [gpu.peak(d) for d in placed["compute_dtype"]], placed["intensity"] * gpu.hbm_bytes_per_s
    )
    assert np.all(placed["attained_flops_per_s"] <= roof * (1 + 1e-9))
    gemms = placed["name"].isin(["attn.qkv_proj", "attn.o_proj", "mlp.up_gate", "mlp.down"])
    np.testing.assert_allclose(placed.loc[gemms, "attained_flops_per_s"], roof[gemms], rtol=1e-9)
    assert set(skipped["kind"]) == {"comm", "embedding"}  # no FLOPs: no place on the chart
    for phase, group in placed.groupby("phase"):
        total = pred.ttft_s if phase == "prefill" else pred.tpot_s
        off_chart = skipped.loc[skipped["phase"] == phase, "time_s"].sum()
        assert group["time_s"].sum() + off_chart == pytest.approx(total, rel=1e-9)


def test_roofline_ceilings_are_the_datasheet_peaks(pred) -> None:  # type: ignore[no-untyped-def]
    gpu = pred.scenario.gpu
    placed, _ = roofline_points(pred.ops_frame())
    fig = roofline_figure(gpu, placed)
    ridges = next(t for t in fig.data if t.name == "ridge points")
    peaks = sorted(set(gpu.peak_flops_per_s.values()))
    assert list(ridges.y) == pytest.approx([p / 1e12 for p in peaks])
    assert list(ridges.x) == pytest.approx([p / gpu.hbm_bytes_per_s for p in peaks])
    assert fig.layout.xaxis.type == "log" and "FLOP/byte" in fig.layout.xaxis.title.text


def test_memory_bars_stack_to_the_total(pred) -> None:  # type: ignore[no-untyped-def]
    fig = memory_bars([("now", pred.memory)])
    stacked = sum(bar.y[0] for bar in fig.data)
    assert stacked == pytest.approx(pred.memory.total_bytes / 1e9, rel=1e-12)
    assert fig.layout.shapes[0].y0 == pytest.approx(pred.memory.capacity_bytes / 1e9)


def test_waterfall_ends_at_the_full_stack() -> None:
    stages = [
        {"stage": "baseline", "tpot_s": 0.030},
        {"stage": "+ KV cache", "tpot_s": 0.012},
        {"stage": "+ more", "tpot_s": 0.010},
    ]
    fig = waterfall_figure(stages, WATERFALL_METRICS["tpot_s"], "t")
    bars = fig.data[0]
    assert list(bars.measure) == ["absolute", "relative", "relative", "total"]
    assert sum(bars.y[:-1]) == pytest.approx(10.0)  # ms: 30 − 18 − 2
    assert "2.50×" in bars.text[1]  # 12 ms over 30 ms


def test_batch_figure_marks_the_crossover_and_memory_limit() -> None:
    frame = sweeps.batch_sweep(DEFAULTS)
    fig = batch_figure(frame, (256, 512), 913, 8)
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert {(r.x0, r.x1) for r in rects} == {(256, 512)}  # shapes take data coordinates
    assert {s.x0 for s in lines} == {913, 8}
    notes = [a for a in fig.layout.annotations if "max batch" in a.text]
    assert notes and notes[0].x == pytest.approx(math.log10(913))  # annotations take log10


def test_cost_per_million_tokens_closed_form() -> None:
    # $3.99 per GPU-hour, 4 GPUs, 584 tokens/s: 3.99·4/3600 $/s over 584 tokens/s, × 1e6
    assert usd_per_million_tokens(3.99, 4, 584.0) == pytest.approx(3.99 * 4 / 3600 / 584 * 1e6)
    assert math.isnan(usd_per_million_tokens(0.0, 4, 584.0))


def test_metric_delta_has_sign_unit_and_percent() -> None:
    now = Metric("tpot_s", "TPOT", 0.010, fmt_time, True, "")
    base = Metric("tpot_s", "TPOT", 0.0125, fmt_time, True, "")
    assert now.delta_text(base) == "-2.5 ms (-20.0 %)"
    assert now.delta_text(now) is None and now.delta_text(None) is None
