"""CI regression, blocking layer: predictions for a fixed scenario set equal the committed
snapshot within 1e-9 relative. An intended change regenerates it in the same commit:
`python -m rooflens.validate.golden --update`, with the reason and the proving test in
validate/golden_reasons.yaml (tests/validate/test_golden_reasons.py)."""

from __future__ import annotations

import json

from rooflens.validate.golden import GOLDEN_FILE, SCENARIOS, differences, snapshot


def test_predictions_match_the_golden_snapshot():
    expected = json.loads(GOLDEN_FILE.read_text())
    assert set(expected) == set(SCENARIOS)
    diff = differences(expected, snapshot(), rel_tol=1e-9)
    assert not diff, (
        "predictions moved (if intended: explain them in validate/golden_reasons.yaml and run "
        "`python -m rooflens.validate.golden --update`):\n" + "\n".join(diff[:20])
    )


def test_differences_reports_moved_numbers():
    old = {"s": {"ttft_s": 1.0, "tpot_s": 2.0}}
    assert differences(old, {"s": {"ttft_s": 1.0, "tpot_s": 2.0 * (1 + 1e-12)}}) == []
    moved = differences(old, {"s": {"ttft_s": 1.0 + 1e-6, "tpot_s": 2.0}})
    assert moved == ["s: ttft_s 1.0 -> 1.000001"]
    assert differences(old, {}) == ["s: scenario removed"]
