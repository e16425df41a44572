"""Settings <-> URL query parameters: defaults give an empty link, every field survives a round
trip, and a bad value is reported and replaced by its default rather than guessed."""

from __future__ import annotations

from dataclasses import fields

from dashboard.settings import (
    DEFAULTS,
    QUERY_NAMES,
    UPLOAD_PREFIX,
    Settings,
    baseline_from_param,
    baseline_to_param,
    from_query,
    to_query,
)
from model.api import make_scenario


def _as_params(query: dict[str, str | list[str]]) -> dict[str, list[str]]:
    return {k: v if isinstance(v, list) else [v] for k, v in query.items()}


def test_defaults_make_an_empty_link() -> None:
    assert to_query(DEFAULTS) == {}
    assert from_query({}) == (DEFAULTS, [])


def test_every_field_round_trips() -> None:
    changed = Settings(
        model="llama-2-7b", gpu="a100-sxm-80gb", batch=3, prompt_len=1000, output_len=77,
        weight_dtype="int4", act_dtype="fp16", kv_dtype="fp8", tp=2, pp=2, ep=2,
        group_size=64, profile="ideal", overhead_gb=2.25, prefill_chunk=0,
        opts=("quant:scheme=gptq", "fusion"), price_per_gpu_hour=1.75,
    )  # fmt: skip
    query = to_query(changed)
    # every field differs from its default, so every field is in the link, under its name
    assert set(query) == {QUERY_NAMES[f.name] for f in fields(Settings)}
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
    s = DEFAULTS.with_(kv_dtype="", act_dtype="fp16", overhead_gb=2.0)
    sc = make_scenario(s.model, s.gpu, **s.scenario_kwargs())
    assert sc.precision.kv_dtype == "fp16"  # "" means: same as the activations
    assert sc.overhead_bytes == 2.0e9
    assert sc.parallel.tp == DEFAULTS.tp and sc.workload.batch == DEFAULTS.batch
