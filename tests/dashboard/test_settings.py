"""Settings <-> URL query parameters: defaults give an empty link, every field survives a round
trip, and a bad value is reported and replaced by its default rather than guessed."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from rooflens.dashboard.labels import LABELS
from rooflens.dashboard.settings import (
    CHOICES,
    DEFAULTS,
    FIELDS,
    MINIMUMS,
    PRESET_IDS,
    QUERY_NAMES,
    UPLOAD_PREFIX,
    Settings,
    baseline_from_param,
    baseline_to_param,
    from_query,
    to_query,
)
from rooflens.hardware.errors import RooflensError
from rooflens.model.predict.api import make_scenario
from rooflens.model.predict.request import ScenarioRequest, bad_value, choices, lower_bound


def _as_params(query: dict[str, str | list[str]]) -> dict[str, list[str]]:
    return {k: v if isinstance(v, list) else [v] for k, v in query.items()}


def test_defaults_make_an_empty_link() -> None:
    assert to_query(DEFAULTS) == {}
    assert from_query({}) == (DEFAULTS, [])


def test_every_field_round_trips() -> None:
    values = dict(
        model="llama-2-7b", gpu="a100-sxm-80gb", batch=3, prompt_len=1000, output_len=77,
        quant="w4a16", weight_dtype="int4", act_dtype="bf16", kv_dtype="fp8", tp=2, pp=2, ep=2,
        group_size=64, profile="ideal", engine="sglang", overhead_gb=2.25, prefill_chunk=0,
        images=2,
        opts=("quant:scheme=gptq", "fusion"), price_per_gpu_hour=1.75,
    )  # fmt: skip
    for name in set(FIELDS) - set(values):  # a field added later: a number off its default
        values[name] = getattr(DEFAULTS, name) + 3
    changed = Settings(**values)
    query = to_query(changed)
    # every field differs from its default, so every field is in the link, under its name
    assert set(query) == {QUERY_NAMES[name] for name in FIELDS}
    assert from_query(_as_params(query)) == (changed, [])


def test_opts_are_canonical_whatever_their_order() -> None:
    assert Settings(opts=("b", "a")) == Settings(opts=("a", "b"))


def test_bad_values_fall_back_to_defaults_with_a_reason() -> None:
    params = {"batch": ["many"], "tp": ["0"], "wdtype": ["fp5"], "price": ["nan"], "prompt": ["64"]}
    settings, problems = from_query(params)
    assert settings == DEFAULTS.with_(prompt_len=64)
    assert len(problems) == 4
    assert any("batch='many'" in p for p in problems)
    assert any("fp5" in p and "int4" in p for p in problems)


def test_uploaded_files_stay_out_of_links() -> None:
    uploaded = DEFAULTS.with_(model=UPLOAD_PREFIX + "/tmp/x/config.json", batch=2)
    assert to_query(uploaded) == {"batch": "2"}
    settings, problems = from_query({"model": [UPLOAD_PREFIX + "/etc/passwd"]})
    assert settings.model == DEFAULTS.model and problems


def test_baseline_round_trips_through_one_parameter() -> None:
    base = DEFAULTS.with_(weight_dtype="int8", batch=16)
    assert baseline_from_param(baseline_to_param(base)) == (base, [])
    assert baseline_from_param("{not json")[0] is None


def test_scenario_kwargs_match_make_scenario() -> None:
    s = DEFAULTS.with_(kv_dtype=None, act_dtype="fp16", overhead_gb=2.0)
    sc = make_scenario(s.model, s.gpu, **s.scenario_kwargs())
    assert sc.precision.kv_dtype == "fp16"  # None means: same as the activations
    assert sc.overhead_bytes == 2.0e9
    assert sc.parallel.tp == DEFAULTS.tp and sc.workload.batch == DEFAULTS.batch


# The keys links carried before the schema (issue 14): links shared then must keep working.
OLD_KEYS = {
    "model": "model", "gpu": "gpu", "batch": "batch", "prompt_len": "prompt",
    "output_len": "output", "weight_dtype": "wdtype", "act_dtype": "adtype",
    "kv_dtype": "kvdtype", "tp": "tp", "pp": "pp", "ep": "ep", "group_size": "group",
    "profile": "profile", "overhead_gb": "overhead_gb", "prefill_chunk": "chunk", "opts": "opt",
    "price_per_gpu_hour": "price",
}  # fmt: skip


def test_every_schema_field_is_a_link_key_and_old_keys_still_read() -> None:
    assert set(ScenarioRequest.model_fields) <= set(QUERY_NAMES)
    assert len(set(QUERY_NAMES.values())) == len(QUERY_NAMES)
    assert {name: QUERY_NAMES[name] for name in OLD_KEYS} == OLD_KEYS
    old_link = {"model": ["llama-2-7b"], "prompt": ["1000"], "wdtype": ["int8"], "chunk": ["0"],
                "overhead_gb": ["2.5"], "price": ["1.5"], "kvdtype": ["fp8"]}  # fmt: skip
    settings, problems = from_query(old_link)
    assert problems == []
    assert (settings.model, settings.prompt_len, settings.weight_dtype) == (
        "llama-2-7b",
        1000,
        "int8",
    )
    assert (settings.prefill_chunk, settings.overhead_gb, settings.price_per_gpu_hour) == (
        0,
        2.5,
        1.5,
    )
    assert settings.kv_dtype == "fp8"


def test_minimums_and_choices_are_the_schema_bounds() -> None:
    for name, field in FIELDS.items():
        bound = lower_bound(field)
        assert MINIMUMS.get(name) == (None if bound is None else bound[0]), name
        assert CHOICES.get(name) == choices(field), name


@pytest.mark.parametrize("name", sorted(MINIMUMS))
def test_a_link_out_of_bounds_gets_the_schema_message(name: str) -> None:
    value = int(MINIMUMS[name]) - 1
    settings, problems = from_query({QUERY_NAMES[name]: [str(value)]})
    assert settings == DEFAULTS
    message = bad_value(Settings, name, value if FIELDS[name].annotation is int else float(value))
    # issue 26 §4: said with the widget's label, as every other error of the page, not the flag
    (problem,) = problems
    bound = message.split(" must ")[1]
    assert problem == (
        f"“{LABELS[name]}” must {bound} (link: {QUERY_NAMES[name]}={value}); "
        f"using {getattr(DEFAULTS, name)}"
    )
    assert "--" not in problem
    if name in ScenarioRequest.model_fields:  # the CLI and the schema say the same
        with pytest.raises(RooflensError, match=re.escape(message)):
            ScenarioRequest(model="m", gpu="g", **{name: value})


def _values(name: str) -> st.SearchStrategy[object]:
    field = FIELDS[name]
    if name in PRESET_IDS:
        return st.sampled_from(sorted(PRESET_IDS[name]())[:20])
    if name in CHOICES:
        none = [None] if getattr(DEFAULTS, name) is None else []
        return st.sampled_from([*none, *CHOICES[name]])
    if name == "opts":
        return st.lists(
            st.sampled_from(["fusion", "quant:scheme=gptq", "medusa"]), unique=True
        ).map(tuple)
    low = MINIMUMS[name]
    if field.annotation is int:
        return st.integers(int(low), 10**6)
    return st.floats(low, 1e4, allow_nan=False).map(lambda x: float(f"{x:.10g}"))


@hyp_settings(max_examples=40, deadline=None)
@given(st.fixed_dictionaries({name: _values(name) for name in FIELDS}))
def test_any_settings_round_trip_through_a_link(values: dict[str, object]) -> None:
    s = Settings(**values)
    assert from_query(_as_params(to_query(s))) == (s, [])
    assert baseline_from_param(baseline_to_param(s)) == (s, [])
