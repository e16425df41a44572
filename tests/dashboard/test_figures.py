"""Figure builders against closed forms: operators sit at or under the roofline min(peak,
I·bandwidth) (on it for GEMMs under the ideal profile), ceilings sit at datasheet peaks, memory
bars stack to the total, waterfall bars end at the full stack's value; and the headline cost."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from rooflens.dashboard import sweeps
from rooflens.dashboard.figures.memory import memory_bars
from rooflens.dashboard.figures.roofline import roofline_figure, roofline_points
from rooflens.dashboard.figures.scaling import batch_figure
from rooflens.dashboard.figures.waterfall import WATERFALL_METRICS, waterfall_figure
from rooflens.dashboard.headline import Metric, usd_per_million_tokens
from rooflens.dashboard.settings import DEFAULTS
from rooflens.io.units import fmt_time


@pytest.fixture(scope="module")
def pred():  # type: ignore[no-untyped-def]
    # the ideal profile: operators sit exactly on the datasheet roof
    return sweeps.predict(DEFAULTS.with_(profile="ideal"))


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
    assert bars.text[1] == "12<br>2.5×"  # 12 ms, 30 ms / 12 ms better than the stage before
    assert bars.text[-1] == "10<br>3× total"  # 30 ms / 10 ms


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


def test_max_batch_heatmap_colours_by_log_and_greys_what_does_not_fit() -> None:
    from rooflens.dashboard.figures.memory import (
        NOTHING_FITS,
        NOTHING_FITS_COLOR,
        max_batch_heatmap,
    )
    from rooflens.dashboard.settings import Settings

    # Llama 3.1 405B on one L4: not even the weights fit, so no cell holds a sequence
    s = Settings(model="llama-3.1-405b", gpu="l4", tp=1)
    grid = sweeps.max_batch_grid(s)
    heat = max_batch_heatmap(grid, 512, "bf16").data[0]
    assert (grid["max_batch"] == 0).all()
    assert all(t == "0" for row in heat.text for t in row)
    assert np.all(np.asarray(heat.z) == NOTHING_FITS)
    assert heat.colorscale[0][1] == NOTHING_FITS_COLOR  # the bottom of the scale: grey
    # on the default scenario every cell fits: colour is log10 of the max batch shown
    grid = sweeps.max_batch_grid(DEFAULTS)
    heat = max_batch_heatmap(grid, 640, "bf16").data[0]
    shown = np.array([[int(t.replace(",", "")) for t in row] for row in heat.text])
    np.testing.assert_allclose(heat.z, np.log10(shown))
    assert shown.min() >= 1


def test_roofline_hover_names_the_operators_hidden_on_the_same_spot(pred) -> None:  # type: ignore[no-untyped-def]
    # a decode GEMM does 2·B FLOPs per bf16 weight (2 bytes): intensity ≈ B = 8 for all four,
    # so they share one spot and each marker's hover must name the others
    placed, _ = roofline_points(pred.ops_frame())
    fig = roofline_figure(pred.scenario.gpu, placed)
    decode = next(t for t in fig.data if t.name == "decode, memory-bound")
    hover = dict(zip([h.split("</b>")[0].removeprefix("<b>") for h in decode.hovertext],
                     decode.hovertext, strict=True))  # fmt: skip
    for gemm in ("attn.qkv_proj", "attn.o_proj", "mlp.up_gate", "mlp.down"):
        x = decode.x[list(hover).index(gemm)]
        assert x == pytest.approx(DEFAULTS.batch, rel=0.05)
        others = {"attn.qkv_proj", "attn.o_proj", "mlp.up_gate", "mlp.down"} - {gemm}
        assert all(f"{o} (decode" in hover[gemm].split("same spot:")[1] for o in others)
    # at ~0.6 FLOP/byte the RMSNorms (of both phases) keep only each other's company
    company = re.findall(r"([\w.]+) \((\w+),", hover["norm.attn"].split("same spot: ")[1])
    assert ("norm.mlp", "decode") in company
    assert all(name.startswith("norm.") for name, _ in company), company


def test_chart_labels_near_the_right_edge_run_inwards() -> None:
    """Issue 26 §4: "critical batch ≈…" and "memory limi…" were cut at the plot's right edge.
    A label in the right half of its log axis is anchored on its right, so it runs inwards."""
    from rooflens.dashboard.figures import inward
    from rooflens.dashboard.figures.curve import curve_figure

    assert inward(10, 1, 1000) == "left" and inward(100, 1, 1000) == "right"
    frame = sweeps.batch_sweep(DEFAULTS)
    speeds = frame["output_tokens_per_s"]
    batches = frame["batch"].tolist()
    fig = curve_figure(frame, (batches[-2], batches[-1]), batches[-1], batches[0])
    for note in fig.layout.annotations:
        # x is log10 of the speed; compare with the middle of the log range by hand
        middle = (math.log10(speeds.min()) + math.log10(speeds.max())) / 2
        assert note.xanchor == ("right" if note.x > middle else "left"), note.text
    sides = {n.text.split(" ≈")[0]: n.xanchor for n in fig.layout.annotations}
    assert sides["critical batch"] == sides["memory limit"] == "right"
    assert sides["current batch"] == "left"
    wide = batch_figure(frame, None, batches[-1], 8)
    assert [a.xanchor for a in wide.layout.annotations if "max batch" in a.text] == ["right"]
