"""Explore's headline carries energy per output token, tokens per joule and, given a tariff,
electricity per million tokens, each with its unit."""

from __future__ import annotations

import pytest

from rooflens.dashboard.headline import headline
from rooflens.model.analysis.energy import energy
from rooflens.model.predict.api import make_scenario, run


def test_headline_has_energy_with_units() -> None:
    pred = run(make_scenario("qwen3-8b", "h100-sxm", batch=8))
    metrics = {m.key: m for m in headline(pred, 2.0, "test", usd_per_kwh=0.1)}
    e = metrics["joules_per_output_token"]
    assert e.value == pytest.approx(energy(pred).joules_per_output_token)
    assert "J/token" in e.text and "tokens/J" in e.help and "electricity $" in e.help
    assert e.lower_is_better and "TDP" in e.help
    plain = {m.key: m for m in headline(pred, 2.0, "test")}["joules_per_output_token"]
    assert "electricity" not in plain.help
