"""Scenario.applied (model/predict/scenario.py): the typed record optimizations leave for later
stages,
instead of an untyped `settings` dict. Each optimization writes the field it owns, with the
value its own formula implies; the record is bounded and refuses unknown keys."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations._swap import side_scenario
from rooflens.model.predict.api import make_pipeline, make_scenario
from rooflens.model.predict.scenario import Applied, Scenario, with_applied
from rooflens.model.specs.params import count_params
from rooflens.model.specs.presets import get_model


def _applied(opts: list[str], **kw: object) -> Applied:
    sc = make_scenario("llama-2-7b", "h100-sxm", **kw)  # type: ignore[arg-type]
    return make_pipeline(sc, opts).scenario.applied


def test_a_plain_scenario_has_nothing_applied() -> None:
    assert _applied([]) == Applied()
    assert "settings" not in Scenario.model_fields


def test_each_optimization_records_what_it_changed() -> None:
    base = count_params(get_model("llama-2-7b")).total
    assert _applied(["prune:heads=0.25"]).prune_from_params == base
    assert _applied(["distill:layers=0.5"]).distill_from_params == base
    assert _applied(["prompt-compression:ratio=4"], prompt_len=1000) == Applied(
        prompt_len_before_compression=1000
    )
    assert _applied(["sliding-window:window=512,sinks=4"]).kv_window_tokens == 516
    assert _applied(["speculative:draft=llama-2-7b"]).decoding == "speculative"
    assert _applied(["pp-microbatches:n=3"], pp=2, batch=8).pp_microbatches == 3


def test_two_decode_replacements_do_not_stack() -> None:
    with pytest.raises(RooflensError, match="both replace the decode step"):
        _applied(["speculative:draft=llama-2-7b", "medusa"])


def test_the_record_is_bounded_and_closed() -> None:
    sc = make_scenario("llama-2-7b", "h100-sxm")
    with pytest.raises(RooflensError, match="pp_microbatches"):
        with_applied(sc, pp_microbatches=-1)
    with pytest.raises(RooflensError, match="decoding"):
        with_applied(sc, decoding="Speculative Decoding")  # an optimization's name, or ''
    with pytest.raises(ValidationError):
        Applied.model_validate({"prune_from": 7})
    with pytest.raises(ValidationError):
        Scenario.model_validate({**dict(sc), "settings": {"pp_microbatches": 2}})


def test_a_side_model_starts_with_nothing_applied() -> None:
    sc = with_applied(make_scenario("llama-2-7b", "h100-sxm"), decoding="speculative")
    draft = side_scenario(sc, get_model("llama-2-7b"), 1, "draft")
    assert sc.applied.decoding == "speculative" and draft.applied == Applied()
