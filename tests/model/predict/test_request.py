"""The one scenario schema (model/predict/request.py): every field is typed, described with its
unit and
bounded; a value out of bounds is one line naming the CLI flag; and `scenario_of` builds from a
request exactly the Scenario the engine-side specs describe (checked field by field against
hand-written expectations, not against itself)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflens.hardware.errors import RooflensError
from rooflens.model.predict.api import make_scenario, run, scenario_of
from rooflens.model.predict.request import (
    CHOICES,
    ScenarioRequest,
    bad_value,
    choices,
    lower_bound,
    meta,
    with_defaults,
)
from rooflens.model.predict.scenario import DEFAULT_OVERHEAD_BYTES

FIELDS = ScenarioRequest.model_fields
NUMBERS = [n for n, f in FIELDS.items() if f.annotation in (int, float, float | None)]
BASE = {"model": "llama-3-8b", "gpu": "h100-sxm"}


def test_every_field_is_described_flagged_and_numbers_are_bounded_with_a_unit() -> None:
    assert set(NUMBERS) >= {"batch", "prompt_len", "output_len", "images", "group_size", "tp",
                            "pp", "ep", "overhead_gb", "prefill_chunk"}  # fmt: skip
    flags = [meta(f)["flag"] for f in FIELDS.values()]
    assert len(set(flags)) == len(flags) and all(f.startswith("--") for f in flags)
    for name, field in FIELDS.items():
        assert field.description and len(field.description) > 10, name
    for name in NUMBERS:
        assert lower_bound(FIELDS[name]) is not None, name
        assert meta(FIELDS[name])["unit"], name
    assert {n for n, f in FIELDS.items() if choices(f)} >= {
        "weight_dtype", "act_dtype", "kv_dtype", "profile"}  # fmt: skip


@pytest.mark.parametrize("name", NUMBERS)
def test_below_the_bound_is_one_line_naming_the_flag(name: str) -> None:
    low, strict = lower_bound(FIELDS[name]) or (0.0, False)
    value = int(low) if strict else int(low) - 1  # the first whole number out of bounds
    message = bad_value(ScenarioRequest, name, value)
    assert message == f"{meta(FIELDS[name])['flag']} must be ≥ {low:g}, got {value}"
    with pytest.raises(RooflensError) as err:
        ScenarioRequest(**BASE, **{name: value})
    assert str(err.value) == message
    ScenarioRequest(**BASE, **{name: int(low) + strict})  # the bound itself (or just above)


def test_choices_nan_and_wrong_types_are_one_line() -> None:
    with pytest.raises(RooflensError, match=r"^--kv-dtype 'fp5' is not one of fp32, "):
        ScenarioRequest(**BASE, kv_dtype="fp5")
    with pytest.raises(RooflensError, match=r"^--overhead-gb must be a finite number, got nan$"):
        ScenarioRequest(**BASE, overhead_gb=math.nan)
    with pytest.raises(RooflensError, match="field batch: expects a number, not true/false"):
        ScenarioRequest(**BASE, batch=True)
    with pytest.raises(RooflensError, match="did you mean prompt_len"):
        ScenarioRequest(**BASE, prompt_lne=5)
    assert CHOICES["profile"] == ("ideal", "calibrated")


def test_scenario_of_maps_each_field_onto_the_engine_specs() -> None:
    sc = make_scenario("llama-3-8b", "h100-sxm", batch=3, prompt_len=100, output_len=7, tp=2,
                       weight_dtype="int4", group_size=64, kv_dtype="fp8", overhead_gb=2.5,
                       prefill_chunk=256, profile="calibrated")  # fmt: skip
    w, p = sc.workload, sc.precision
    assert (w.batch, w.prompt_len, w.output_len, w.prefill_chunk_tokens) == (3, 100, 7, 256)
    assert (p.weight_dtype, p.weight_group_size, p.kv_dtype, p.act_dtype) == (
        "int4", 64, "fp8", "bf16")  # fmt: skip
    assert sc.parallel.tp == 2 and sc.profile == "calibrated"
    assert sc.overhead_bytes == 2.5e9  # GB are 1e9 bytes (DESIGN.md, Units)
    plain = make_scenario("llama-3-8b", "h100-sxm")
    assert plain.overhead_bytes == DEFAULT_OVERHEAD_BYTES == 1.5 * 2**30
    # one route: the keyword shorthand and an explicit request give the same prediction
    request = ScenarioRequest(**BASE, batch=3, tp=2)
    assert run(scenario_of(request)).tpot_s == run(make_scenario(**BASE, batch=3, tp=2)).tpot_s


def test_a_face_overrides_defaults_in_one_table_and_keeps_the_bounds() -> None:
    Face = with_defaults(ScenarioRequest, {"batch": 8, "model": "llama-3-70b"}, "Face")
    face = Face(gpu="h100-sxm")
    assert (face.batch, face.model, face.tp) == (8, "llama-3-70b", 1)
    assert Face.model_fields["batch"].description == FIELDS["batch"].description
    with pytest.raises(RooflensError, match=r"^--batch must be ≥ 1, got 0$"):
        Face(gpu="h100-sxm", batch=0)


@settings(max_examples=60, deadline=None)
@given(
    batch=st.integers(-5, 4096),
    tp=st.integers(-2, 16),
    overhead=st.one_of(st.none(), st.floats(-10, 100, allow_nan=False)),
    dtype=st.sampled_from([None, "bf16", "fp8", "int4", "fp5", ""]),
)
def test_a_request_is_valid_exactly_when_every_value_is_in_bounds(
    batch: int, tp: int, overhead: float | None, dtype: str | None
) -> None:
    ok = batch >= 1 and tp >= 1 and (overhead is None or overhead >= 0)
    ok = ok and dtype in (None, "bf16", "fp8", "int4")
    try:
        r = ScenarioRequest(**BASE, batch=batch, tp=tp, overhead_gb=overhead, kv_dtype=dtype)
    except RooflensError as exc:
        assert not ok, exc
        assert "\n" not in str(exc)
        return
    assert ok
    assert hash(r) == hash(r.with_()) and r == r.with_()  # frozen, hashable: a cache key
