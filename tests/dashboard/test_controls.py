"""The sidebar's scenario widgets take their bounds, steps, help and options from the schema's
field metadata (model/predict/request.py via dashboard/settings.py), so a widget accepts exactly
what
the CLI and a link accept."""

from __future__ import annotations

from rooflens.dashboard.controls import SAME_AS_ACT
from rooflens.dashboard.settings import CHOICES, FIELDS, MINIMUMS
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
    for name in ("weight_dtype", "act_dtype"):
        assert tuple(at.sidebar.selectbox(key=name).options) == CHOICES[name]
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
