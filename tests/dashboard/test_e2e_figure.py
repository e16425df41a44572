"""The Validation page's whole-model figure (dashboard/figures/e2e.py): per scenario, the
predicted operator stack beside the measured one, in ms, from the results-store frame that
`rooflens validate e2e` writes (validate/e2e/report.py)."""

from __future__ import annotations

import pytest

from rooflens.dashboard.figures.e2e import e2e_figure
from rooflens.validate.e2e.report import load_e2e, results_frame


def _row(phase: str, batch: int, context: int, scale: float) -> dict:
    ops = [
        {"name": "attn.core", "predicted_s": 1e-3 * scale, "measured_s": 2e-3 * scale},
        {"name": "lm_head", "predicted_s": 3e-3, "measured_s": 2.5e-3},
        {"name": "unattributed", "predicted_s": 1e-4, "measured_s": 5e-4},
    ]
    predicted = sum(o["predicted_s"] for o in ops)
    measured = sum(o["measured_s"] for o in ops)
    return {
        "phase": phase,
        "batch": batch,
        "context": context,
        "mode": "eager",
        "predicted_s": predicted,
        "measured_s": measured,
        "measured_q20_s": measured,
        "measured_q80_s": measured,
        "ops": ops,
    }


@pytest.fixture
def frame():
    rows = [
        _row(p, b, c, c / 1024) for b in (1, 8) for c in (1024, 4096) for p in ("prefill", "decode")
    ]
    return results_frame(rows, {"model": "llama-3-8b", "gpu": "h100-sxm"})


def test_bars_stack_each_operator_predicted_beside_measured(frame):
    fig = e2e_figure(frame, "prefill")
    assert [t.name for t in fig.data] == ["attn.core", "lm_head", "unattributed"]
    assert fig.layout.barmode == "stack" and "ms" in fig.layout.yaxis.title.text
    scenarios, kinds = fig.data[0].x
    assert list(kinds[:2]) == ["predicted", "measured"] and len(kinds) == 2 * 4
    assert scenarios[0] == scenarios[1] and scenarios[0].startswith("B=1, S=1024<br>error ")
    # each bar's stack adds up to the step's total, in ms
    totals = frame[(frame["phase"] == "prefill") & (frame["op"] == "total")]
    first = totals[(totals["batch"] == 1) & (totals["context"] == 1024)].iloc[0]
    stacked = [sum(t.y[i] for t in fig.data) for i in (0, 1)]
    assert stacked == pytest.approx([first["predicted_s"] * 1e3, first["measured_s"] * 1e3])


def test_missing_measurements_leave_gaps_and_no_results_is_an_empty_frame(frame, tmp_path):
    frame.loc[frame["op"] == "attn.core", "measured_s"] = None  # e.g. a compiled run
    fig = e2e_figure(frame, "decode")
    assert fig.data[0].y[1] is None and fig.data[0].y[0] > 0
    assert load_e2e(tmp_path).empty


def test_each_scenario_shows_the_error_the_caption_defines(frame):
    # issue 26 §6: error = predicted / measured − 1 of the step; at B=1, S=1024 (scale 1) the
    # step predicts 1 + 3 + 0.1 = 4.1 ms against 2 + 2.5 + 0.5 = 5 ms measured: −18 %
    fig = e2e_figure(frame, "prefill")
    scenarios, _ = fig.data[0].x
    assert scenarios[0] == "B=1, S=1024<br>error -18 %"
    # S=4096 scales attention 4×: (4 + 3 + 0.1) / (8 + 2.5 + 0.5) − 1 = −35 %
    assert "B=1, S=4096<br>error -35 %" in scenarios
