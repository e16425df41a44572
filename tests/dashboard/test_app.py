"""The app around the pages: links reproduce what is on screen (query parameters in and out), a
pinned baseline gives signed deltas, optimizations with parameters come from the sidebar or a
link, bad links and bad settings show one-line messages, and an uploaded HF config.json predicts
exactly what the matching preset predicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apptest_helpers import assert_clean, metrics, si

from rooflens.dashboard import compute, sweeps
from rooflens.dashboard.settings import DEFAULTS, baseline_to_param
from rooflens.hardware.presets import get_gpu
from rooflens.model.predict.api import make_scenario, run

FIXTURES = Path(__file__).resolve().parents[1] / "model" / "fixtures"


def test_a_link_sets_the_widgets_and_the_numbers(app) -> None:  # type: ignore[no-untyped-def]
    at = app(model="llama-3-8b", gpu="a100-sxm-80gb", tp="1", batch="32", wdtype="int8")
    assert_clean(at)
    assert at.sidebar.selectbox(key="model").value == "llama-3-8b"
    assert at.sidebar.number_input(key="batch").value == 32
    direct = run(
        make_scenario(
            "llama-3-8b", "a100-sxm-80gb", batch=32, weight_dtype="int8", profile=DEFAULTS.profile
        )
    )
    assert si(metrics(at)["TPOT"]) == pytest.approx(direct.tpot_s, rel=5e-3)


def test_widgets_write_the_link_and_defaults_leave_it(app) -> None:  # type: ignore[no-untyped-def]
    at = app()
    assert dict(at.query_params) == {}
    at.sidebar.number_input(key="batch").set_value(3).run()
    at.sidebar.radio(key="page").set_value("memory").run()
    assert dict(at.query_params) == {"batch": "3", "page": "memory"}
    at.sidebar.number_input(key="batch").set_value(DEFAULTS.batch).run()
    assert dict(at.query_params) == {"page": "memory"}


def test_a_bad_link_warns_and_falls_back(app) -> None:  # type: ignore[no-untyped-def]
    at = app(batch="lots", model="gpt-5", opt="warp-drive")
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert "batch='lots'" in warnings and "gpt-5" in warnings and "warp-drive" in warnings
    assert at.sidebar.selectbox(key="model").value == DEFAULTS.model
    assert len(at.metric) == 7  # the page still renders, on the defaults (energy is the 7th)


def test_an_invalid_scenario_shows_one_line(app) -> None:  # type: ignore[no-untyped-def]
    at = app(tp="3")  # 3 does not divide Llama-3-70B's 64 heads
    assert not at.exception
    # one line, beside the widget, in the widget's words, not the CLI's
    assert len(at.sidebar.error) == 1
    message = at.sidebar.error[0].value
    assert "“Tensor-parallel GPUs (TP)” = 3 must divide" in message and "--tp" not in message
    assert "\n" not in message
    assert [h.value for h in at.header] == ["Explore"]  # the page keeps its title


def test_an_invalid_change_keeps_the_last_valid_page(app) -> None:  # type: ignore[no-untyped-def]
    """Issue 15 item 6: a bad widget value no longer blanks the page; it keeps the last valid
    scenario's numbers, says so, and the link keeps what the widgets say."""
    at = app()
    before = metrics(at)["TPOT"]
    at.sidebar.number_input(key="tp").set_value(3).run()
    assert not at.exception and len(at.sidebar.error) == 1
    assert "Tensor-parallel GPUs (TP)" in at.sidebar.error[0].value
    assert metrics(at)["TPOT"] == before and len(at.metric) == 7  # six tiles and energy
    assert any("last valid scenario" in w.value for w in at.warning)
    assert at.query_params["tp"] == ["3"] or at.query_params["tp"] == "3"
    at.sidebar.number_input(key="tp").set_value(8).run()
    assert_clean(at)
    assert not at.warning
    assert metrics(at)["TPOT"] != before


def test_pinned_baseline_gives_signed_deltas_and_travels_in_the_link(app) -> None:  # type: ignore[no-untyped-def]
    at = app()
    at.sidebar.button[1].click().run()  # "Pin baseline"
    at.sidebar.selectbox(key="weight_dtype").set_value("int4").run()
    tpot = next(m for m in at.metric if m.label == "TPOT")
    base = run(make_scenario("llama-3-70b", "h100-sxm", batch=8, tp=4, profile=DEFAULTS.profile))
    now = run(
        make_scenario(
            "llama-3-70b", "h100-sxm", batch=8, tp=4, weight_dtype="int4", profile=DEFAULTS.profile
        )
    )
    assert tpot.delta.startswith("-")  # int4 weights: faster decode
    assert f"({(now.tpot_s / base.tpot_s - 1) * 100:.1f} %)" in tpot.delta
    link = dict(at.query_params)
    assert link["baseline"] == baseline_to_param(DEFAULTS) and link["wdtype"] == "int4"
    again = app(**link)  # the link alone reproduces the deltas
    assert next(m for m in again.metric if m.label == "TPOT").delta == tpot.delta


def test_optimizations_with_parameters_from_sidebar_and_link(app) -> None:  # type: ignore[no-untyped-def]
    at = app(opt="quant:scheme=gptq")
    assert_clean(at)
    assert at.sidebar.multiselect(key="opts_selected").value == ["quant"]
    assert at.sidebar.text_input(key="opt.quant.scheme").value == "gptq"
    direct = run(
        make_scenario("llama-3-70b", "h100-sxm", batch=8, tp=4, profile=DEFAULTS.profile),
        ["quant:scheme=gptq"],
    )
    assert si(metrics(at)["TPOT"]) == pytest.approx(direct.tpot_s, rel=5e-3)
    at.sidebar.text_input(key="opt.quant.scheme").set_value("smoothquant").run()
    assert at.query_params["opt"] == "quant:scheme=smoothquant"
    w8a8 = run(
        make_scenario("llama-3-70b", "h100-sxm", batch=8, tp=4, profile=DEFAULTS.profile),
        ["quant:scheme=smoothquant"],
    )
    assert si(metrics(at)["TPOT"]) == pytest.approx(w8a8.tpot_s, rel=5e-3)


def test_uploaded_hf_config_predicts_like_the_preset() -> None:
    data = (FIXTURES / "Meta-Llama-3-70B" / "config.json").read_bytes()
    ref = compute.save_upload("config.json", data)
    assert compute.save_upload("config.json", data) == ref  # content-addressed, written once
    uploaded = sweeps.predict(DEFAULTS.with_(model=ref))
    preset = sweeps.predict(DEFAULTS)
    assert uploaded.scenario.model.id == "uploaded"  # no _name_or_path: named after its folder
    assert uploaded.ttft_s == preset.ttft_s and uploaded.tpot_s == preset.tpot_s
    assert uploaded.memory.total_bytes == preset.memory.total_bytes


def test_uploaded_gpu_spec_is_used() -> None:
    spec = get_gpu("h100-sxm").model_dump()
    spec.update(id="my-h100-2x-hbm", hbm_bytes_per_s=2 * spec["hbm_bytes_per_s"])
    ref = compute.save_upload("my-gpu.json", json.dumps(spec).encode())
    ideal = DEFAULTS.with_(profile="ideal")  # the roofline alone: time follows bandwidth
    faster = sweeps.predict(ideal.with_(gpu=ref))
    base = sweeps.predict(ideal)
    assert faster.scenario.gpu.id == "my-h100-2x-hbm"
    # decode at batch 8 is memory-bound: twice the bandwidth, about half the step time
    assert faster.tpot_s < 0.6 * base.tpot_s
