"""The options that describe one scenario, shared by `memory`, `predict` and `compare`: generated
by walking the fields of `ScenarioRequest` (model/predict/request.py: flag, help, default, bound
and choices all come from the schema), and the Scenario they build through `scenario_of`
(model/predict/api.py). A new scenario option is a new field there, not a line here.

`memory` sizes one context: its `--context` stands for prompt_len with output_len 1 (the field's
`memory` entry), and the fields marked `memory=False` (output length, images, activation dtype,
profile) are left out.
"""

from __future__ import annotations

import argparse
from typing import Any

from rooflens.argtypes import count, finite_number
from rooflens.model.predict.api import scenario_of
from rooflens.model.predict.request import ScenarioRequest, choices, meta, spelling
from rooflens.model.predict.scenario import Scenario


def add_scenario_args(p: argparse.ArgumentParser, memory_only: bool = False) -> None:
    """The scenario's options; `memory` takes one --context in place of the workload's."""
    for name, field in ScenarioRequest.model_fields.items():
        shown = meta(field)
        alias = shown.get("memory", True) if memory_only else True
        if isinstance(alias, dict):  # memory's --context stands for prompt_len
            p.add_argument(alias["flag"], dest=name, type=count, default=alias["default"],
                           help=f"{alias['help']} (default {alias['default']})")  # fmt: skip
        if not alias or isinstance(alias, dict):
            continue
        options: dict[str, Any] = {"dest": name, "help": field.description}
        if field.is_required():
            options["required"] = True
        elif field.annotation == tuple[str, ...]:
            options.update(action="append", default=[], metavar="NAME[:k=v,...]")
        else:
            options["default"] = field.default
            if field.default is not None:
                options["help"] = f"{field.description} (default {field.default})"
        allowed = choices(field)
        if allowed is not None:
            options["choices"] = allowed
            if (read := spelling(field)) is not None:
                options["type"] = read  # argparse checks the choice after the type
        elif field.annotation is int:
            options["type"] = count  # a whole number; the schema checks its bound
        elif field.annotation in (float, float | None):
            options["type"] = finite_number
        p.add_argument(shown["flag"], **options)
    p.add_argument("--json", action="store_true", help="machine-readable output")


def request_from_args(args: argparse.Namespace, memory_only: bool = False) -> ScenarioRequest:
    """The request the options of `add_scenario_args` describe, checked by the schema."""
    values = {n: getattr(args, n) for n in ScenarioRequest.model_fields if hasattr(args, n)}
    if memory_only:
        values["output_len"] = 1
    return ScenarioRequest(**values)


def scenario_from_args(args: argparse.Namespace, memory_only: bool = False) -> Scenario:
    """The Scenario the options of `add_scenario_args` describe (model/predict/api.py checks
    them)."""
    return scenario_of(request_from_args(args, memory_only))
