"""Shared plumbing for optimizations that swap or add a model (pruning, distillation, a draft
model, a prompt compressor): rebuild the scenario around another spec and re-check the rules
Scenario enforces (TP divides heads, PP divides layers, context fits), as one-line errors."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from rooflens.hardware.errors import RooflensError, validation_message
from rooflens.model.predict.scenario import Applied, Parallelism, Scenario
from rooflens.model.specs.spec import ModelSpec


def with_model(sc: Scenario, spec: ModelSpec, what: str, check_spec: bool = True) -> Scenario:
    """The scenario with its model replaced, validated again. `check_spec=False` keeps a derived
    spec that ModelSpec's own rules would refuse (a pruned model's H'·Dh ≠ d_model) and checks
    only the scenario's rules (TP divides heads, PP divides layers, context fits)."""
    try:
        if check_spec:
            return Scenario.model_validate({**dict(sc), "model": spec})
        new: Any = sc.model_copy(update={"model": spec}, checked=False)
        checked: Scenario = new._check()  # Scenario's own rules, without ModelSpec's
        return checked
    except ValidationError as exc:
        raise RooflensError(validation_message(exc, what)) from None
    except ValueError as exc:
        raise RooflensError(f"invalid {what}: {exc}") from None


def side_scenario(sc: Scenario, spec: ModelSpec, tp: int, what: str) -> Scenario:
    """A second model on the same GPUs, precision and workload (a draft, a compressor), with
    its own tensor parallelism, no pipeline or expert parallelism, and no optimizations."""
    try:
        return Scenario.model_validate(
            {**dict(sc), "model": spec, "parallel": Parallelism(tp=tp), "applied": Applied()}
        )
    except ValidationError as exc:
        raise RooflensError(validation_message(exc, what)) from None
