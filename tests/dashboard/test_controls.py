"""The sidebar's scenario widgets take their bounds, steps, help and options from the schema's
field metadata (model/predict/request.py via dashboard/settings.py), so a widget accepts exactly
what
the CLI and a link accept."""

from __future__ import annotations

import pytest
from apptest_helpers import metrics, si

from rooflens.dashboard.controls import FROM_SCHEME, SAME_AS_ACT
from rooflens.dashboard.settings import CHOICES, DEFAULTS, FIELDS, MINIMUMS
from rooflens.hardware.profiles import ENGINE_NAMES
from rooflens.model.predict.api import make_scenario, run
from rooflens.model.predict.request import meta


def test_number_widgets_have_the_schema_bounds(app) -> None:  # type: ignore[no-untyped-def]
    at = app()
    widgets = {w.key: w for w in at.sidebar.number_input}
    assert set(widgets) == set(MINIMUMS)  # every number of the schema has its widget
    for name, widget in widgets.items():
        assert widget.min == MINIMUMS[name], name
        assert widget.max is None, name
        if "step" in meta(FIELDS[name]):
            assert widget.step == meta(FIELDS[name])["step"], name
    assert widgets["price_per_gpu_hour"].help == FIELDS["price_per_gpu_hour"].description


def test_choice_widgets_offer_the_schema_choices(app) -> None:  # type: ignore[no-untyped-def]
    at = app()
    for name in ("weight_dtype", "act_dtype"):  # the expert's override of the scheme's dtypes
        assert tuple(at.sidebar.selectbox(key=name).options) == (FROM_SCHEME, *CHOICES[name])
    assert CHOICES["quant"][0] == "native"  # the default on every face
    assert at.sidebar.selectbox(key="quant").value == "native"
    assert tuple(at.sidebar.selectbox(key="kv_dtype").options) == (
        SAME_AS_ACT,
        *CHOICES["kv_dtype"],
    )
    assert tuple(at.sidebar.radio(key="profile").options) == CHOICES["profile"]


def test_an_error_about_a_field_is_told_in_its_widget_words(app) -> None:  # type: ignore[no-untyped-def]
    at = app(images="2")  # the default model has no vision encoder
    assert at.sidebar.number_input(key="images").value == 2
    assert [e.value for e in at.sidebar.error] == [
        "“Images per prompt” = 2: llama-3-70b has no vision encoder"
    ]


def test_the_scheme_picker_names_what_native_means_and_the_schemes(app) -> None:  # type: ignore[no-untyped-def]
    # issue 26 §2: gpt-oss opens in its native format (MXFP4 experts, bf16 attention), as the
    # CLI prices it, and the picker says so; schemes carry the names engines give them
    at = app(model="gpt-oss-20b", tp="1")
    picker = at.sidebar.selectbox(key="quant")
    assert picker.value == "native"
    shown = dict(zip(picker.options, picker.options, strict=True))
    assert shown  # the options are the scheme ids; their labels come from format_func
    from rooflens.dashboard.labels import quant_label

    assert quant_label("gpt-oss-20b", "h100-sxm", "native") == (
        "native: MXFP4 experts, bf16 attention"
    )
    assert quant_label("deepseek-v3", "h200", "native") == "native: FP8-block"
    assert quant_label("llama-3-8b", "h100-sxm", "w4a16").startswith("W4A16 — ")
    memory = next(m for m in at.metric if m.label.startswith("Memory per GPU"))
    from rooflens.model.predict.api import make_scenario, run

    cli = run(make_scenario("gpt-oss-20b", "h100-sxm", batch=8))  # the CLI, at the page's batch
    assert cli.scenario.precision.expert_dtype == "mxfp4"
    assert memory.value.startswith(f"{cli.memory.total_bytes / 1e9:.1f} GB")  # not 44 GB of bf16


def test_an_engine_that_does_not_run_on_the_gpu_is_refused_beside_its_widget(app) -> None:  # type: ignore[no-untyped-def]
    # TensorRT-LLM builds for NVIDIA GPUs only (hardware/profiles.py ENGINE_VENDORS)
    at = app(gpu="mi300x", engine="trtllm")
    assert at.sidebar.selectbox(key="engine").value == "trtllm"
    (error,) = [e.value for e in at.sidebar.error]
    assert "“Engine” = trtllm: TensorRT-LLM runs on NVIDIA hardware only" in error
    assert "(vLLM and SGLang run there)" in error
    at.sidebar.selectbox(key="engine").set_value("sglang").run()
    assert not at.sidebar.error and not at.exception


def test_the_engine_widget_prices_with_that_engine_s_kernels(app) -> None:  # type: ignore[no-untyped-def]
    at = app(model="llama-3-8b", gpu="b300", tp="1", batch="1", quant="w8a8-fp8")
    widget = at.sidebar.selectbox(key="engine")
    assert tuple(widget.options) == tuple(ENGINE_NAMES[e] for e in CHOICES["engine"])
    assert widget.value == DEFAULTS.engine == "vllm"  # the schema's stated default
    for engine in ("trtllm", "sglang"):
        at.sidebar.selectbox(key="engine").set_value(engine).run()
        assert not at.exception and at.query_params["engine"] == engine
        direct = run(make_scenario("llama-3-8b", "b300", batch=1, quant="w8a8-fp8",
                                   engine=engine, profile=DEFAULTS.profile))  # fmt: skip
        assert si(metrics(at)["TPOT"]) == pytest.approx(direct.tpot_s, rel=5e-3)
        assert f"{engine} kernels" in " ".join(c.value for c in at.sidebar.caption)
