"""rooflens: predict how a transformer LLM runs on a GPU, then prove it on real kernels.

The Python API (rooflens/api.py, docs/api.md): `predict`, `memory`, `compare`, `plan` and
`validate_kernels`, and the types they take and return. `import rooflens` stays light: each name
is imported on first use (no pandas, torch or streamlit until a function needs them).

    >>> import rooflens
    >>> rooflens.predict(model="llama-3-8b", gpu="h100-sxm").tpot_s  # doctest: +SKIP
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it
_WHERE = {
    "predict": "rooflens.api",
    "memory": "rooflens.api",
    "compare": "rooflens.api",
    "plan": "rooflens.api",
    "validate_kernels": "rooflens.api",
    "Waterfall": "rooflens.api",
    "KernelValidation": "rooflens.api",
    "ScenarioRequest": "rooflens.model.predict.request",
    "Scenario": "rooflens.model.predict.scenario",
    "Prediction": "rooflens.model.predict.steps",
    "MemoryBreakdown": "rooflens.model.predict.steps",
    "Plan": "rooflens.model.planner.plan",
    "ModelSpec": "rooflens.model.specs.spec",
    "GPUSpec": "rooflens.hardware.spec",
    "SystemSpec": "rooflens.hardware.spec",
    "RooflensError": "rooflens.hardware.errors",
    "FieldError": "rooflens.hardware.errors",
    "get_model": "rooflens.model.specs.presets",
    "get_gpu": "rooflens.hardware.presets",
}
__all__ = [
    "FieldError",
    "GPUSpec",
    "KernelValidation",
    "MemoryBreakdown",
    "ModelSpec",
    "Plan",
    "Prediction",
    "RooflensError",
    "Scenario",
    "ScenarioRequest",
    "SystemSpec",
    "Waterfall",
    "compare",
    "get_gpu",
    "get_model",
    "memory",
    "plan",
    "predict",
    "validate_kernels",
]  # the names of _WHERE (tests/test_api.py checks)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'rooflens' has no attribute {name!r}")
    value = getattr(import_module(_WHERE[name]), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names come from __getattr__
    from rooflens.api import (
        KernelValidation,
        Waterfall,
        compare,
        memory,
        plan,
        predict,
        validate_kernels,
    )
    from rooflens.hardware.errors import FieldError, RooflensError
    from rooflens.hardware.presets import get_gpu
    from rooflens.hardware.spec import GPUSpec, SystemSpec
    from rooflens.model.planner.plan import Plan
    from rooflens.model.predict.request import ScenarioRequest
    from rooflens.model.predict.scenario import Scenario
    from rooflens.model.predict.steps import MemoryBreakdown, Prediction
    from rooflens.model.specs.presets import get_model
    from rooflens.model.specs.spec import ModelSpec
