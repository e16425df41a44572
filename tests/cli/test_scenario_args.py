"""The scenario options of `memory`, `predict` and `compare` are generated from the schema
(model/predict/request.py): every field is a flag with the field's default, choices and help;
`memory`
has --context in place of the workload's lengths; and a value out of bounds ends in exit 2 with
the schema's own one-line message."""

from __future__ import annotations

import argparse

import pytest

from rooflens.cli import build_parser, main
from rooflens.model.predict.request import ScenarioRequest, bad_value, choices, lower_bound, meta

FIELDS = ScenarioRequest.model_fields
PREDICT = ["predict", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--no-ops"]


def _options(command: str) -> dict[str, argparse.Action]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {o: a for a in sub.choices[command]._actions for o in a.option_strings}


@pytest.mark.parametrize("command", ["predict", "compare", "memory"])
def test_every_field_is_a_flag_with_the_schema_default_choices_and_help(command: str) -> None:
    options = _options(command)
    for name, field in FIELDS.items():
        shown = meta(field)
        if command == "memory" and shown.get("memory", True) is not True:
            assert shown["flag"] not in options, name
            continue
        action = options[shown["flag"]]
        assert action.dest == name
        assert action.required == field.is_required()
        if not field.is_required():
            assert action.default == (list(field.default) if name == "opts" else field.default)
        assert str(field.description) in str(action.help)
        assert action.choices == choices(field)
    if command == "memory":  # one context in place of prompt and output lengths
        assert options["--context"].dest == "prompt_len" and options["--context"].default == 2048


NUMBERS = [n for n, f in FIELDS.items() if lower_bound(f) is not None]


@pytest.mark.parametrize("name", NUMBERS)
def test_out_of_bounds_is_the_schema_message(capsys, name: str) -> None:  # type: ignore[no-untyped-def]
    low, strict = lower_bound(FIELDS[name]) or (0.0, False)
    value = int(low) - (0 if strict else 1)
    assert main([*PREDICT, meta(FIELDS[name])["flag"], str(value)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {bad_value(ScenarioRequest, name, value)}\n"


def test_memory_context_is_the_prompt_with_one_output_token(capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    argv = ["--model", "llama-2-7b", "--gpu", "h100-sxm", "--batch", "4", "--json"]
    assert main(["memory", *argv, "--context", "1000"]) == 0
    memory = json.loads(capsys.readouterr().out)
    assert main(["predict", *argv, "--prompt-len", "1000", "--output-len", "1"]) == 0
    predicted = json.loads(capsys.readouterr().out)["memory"]
    assert memory["kv_cache_bytes"] == predicted["kv_cache_bytes"] > 0
