"""Energy per output token: the power model's bounds and limits (compute-bound at TDP,
memory-bound at the documented share), closed forms for the electricity cost, and the CLI's
energy keys and rows."""

from __future__ import annotations

import json

import pytest

from rooflens.cli import main
from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import get_gpu
from rooflens.model.analysis.energy import (
    IDLE_FRACTION_OF_TDP,
    MEMORY_POWER_SHARE,
    electricity_usd_per_million_tokens,
    energy,
)
from rooflens.model.planner.gpu_prices import usd_per_million_tokens
from rooflens.model.predict.api import make_scenario, run


def test_compute_bound_prefill_draws_near_tdp_and_memory_bound_decode_the_memory_share() -> None:
    # one GPU, so no collective (idle-power) time dilutes either phase
    # the roofline's own utilisation (ideal: each op at its roof), the closed form below
    pred = run(make_scenario("llama-3.1-8b", "h100-sxm", batch=1, prompt_len=8192, profile="ideal"))
    e = energy(pred)
    idle, tdp = 0.1 * 700.0, 700.0
    assert (e.idle_w, e.tdp_w) == (pytest.approx(idle), tdp)
    assert e.prefill_power_w > idle + 0.9 * (tdp - idle)  # GEMMs at the tensor-core roof
    # batch-1 decode streams weights: u ≈ MEMORY_POWER_SHARE (+ a little compute)
    expected = idle + MEMORY_POWER_SHARE * (tdp - idle)
    assert e.decode_power_w == pytest.approx(expected, rel=0.1)
    assert idle <= e.decode_power_w <= e.prefill_power_w <= tdp


def test_energy_is_phase_power_times_phase_time_on_every_gpu() -> None:
    sc = make_scenario("llama-3.1-70b", "h100-sxm", tp=4, batch=8, prompt_len=1024, output_len=64)
    pred = run(sc)
    e = energy(pred)
    by_phase = pred.ttft_s * e.prefill_power_w + (pred.e2e_s - pred.ttft_s) * e.decode_power_w
    assert e.energy_j == pytest.approx(4 * by_phase)
    assert e.joules_per_output_token == pytest.approx(e.energy_j / (8 * 64))
    assert e.output_tokens_per_joule == pytest.approx(1 / e.joules_per_output_token)


def test_batching_amortises_energy_per_token() -> None:
    one = energy(run(make_scenario("qwen3-8b", "h100-sxm", batch=1)))
    many = energy(run(make_scenario("qwen3-8b", "h100-sxm", batch=64)))
    assert many.joules_per_output_token < one.joules_per_output_token / 10


def test_a_preset_idle_figure_replaces_the_default_fraction() -> None:
    gpu = get_gpu("h100-sxm")
    assert energy(run(make_scenario("qwen3-8b", "h100-sxm"))).idle_w == pytest.approx(
        IDLE_FRACTION_OF_TDP * gpu.tdp_watts  # type: ignore[operator]
    )
    sources = {**gpu.sources, "idle_watts": "measured idle board power (test)"}
    measured = gpu.model_copy(update={"idle_watts": 100.0, "sources": sources})
    sc = make_scenario("qwen3-8b", "h100-sxm")
    sc = sc.model_copy(update={"system": sc.system.model_copy(update={"gpu": measured})})
    assert energy(run(sc)).idle_w == 100.0


def test_electricity_closed_form() -> None:
    # 1 J/token is 10⁶ J per M tokens = 0.2778 kWh; at $0.10/kWh that is $0.02778
    assert electricity_usd_per_million_tokens(1.0, 0.10) == pytest.approx(1e6 / 3.6e6 * 0.10)
    pred = run(make_scenario("qwen3-8b", "h100-sxm", batch=16))
    e = energy(pred, usd_per_kwh=0.15)
    assert e.electricity_usd_per_million_tokens == pytest.approx(
        e.joules_per_output_token * 1e6 / 3.6e6 * 0.15
    )
    assert energy(pred).electricity_usd_per_million_tokens is None
    with pytest.raises(RooflensError, match="kWh"):
        energy(pred, usd_per_kwh=-1.0)


def test_one_cost_formula() -> None:
    # $3.99/h for 584 tokens/s: 3.99/3600 $/s ÷ 584 tokens/s × 10⁶
    assert usd_per_million_tokens(3.99, 584.0) == pytest.approx(3.99 / 3600 / 584 * 1e6)


def test_predict_reports_energy_in_json_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["predict", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--batch", "8"]
    assert main([*args, "--json", "--usd-per-kwh", "0.1"]) == 0
    data = json.loads(capsys.readouterr().out)["energy"]
    assert data["output_tokens_per_joule"] == pytest.approx(1 / data["joules_per_output_token"])
    assert data["electricity_usd_per_million_tokens"] > 0
    assert main([*args, "--no-ops"]) == 0
    out = capsys.readouterr().out
    assert "J/token" in out and "tokens/J" in out and "W decode" in out
