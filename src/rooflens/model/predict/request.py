"""The scenario as a user states it: ONE typed declaration, `ScenarioRequest`, of every parameter
a user sets (model, GPU, workload, precision, parallelism, overheads, optimizations), each field
described with its unit and bounded. Every face is derived from it, not declared again:

- the CLI options of `memory`, `predict` and `compare` (cli/scenario_args.py walks the fields);
- the dashboard's `Settings`, its link keys, choices and minimums, and its sidebar's bounds
  (dashboard/settings.py, dashboard/controls.py);
- the capacity planner's list options (model/planner/plan_args.py maps them onto fields here);
- `model.predict.api.scenario_of`, which turns a request into the validated engine-side `Scenario`.

How a face shows a field is in its `json_schema_extra` (read it with `meta`): `flag` (the CLI
option), `label` (the dashboard widget's words, unit included), `query` (the link's key when it
is not the field's name: short and stable, shared links depend on it), `unit`, `choices` (a key
of CHOICES), `preset` (a key of PRESETS: the field names a preset), `memory` (False: `rooflens
memory` leaves it out; a dict: the flag, default and help it has there) and `step` (the
sidebar's increment). A value out of bounds or choices is one line, `bad_value`, the same on
every face. Where faces differ in a default (the dashboard opens on a 70B model at batch 8,
TP 4), the face keeps a table of overrides (`with_defaults`) and nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from annotated_types import Ge, Gt
from pydantic import Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from rooflens.hardware.errors import FieldError, RooflensError, validation_message
from rooflens.hardware.presets import gpu_ids
from rooflens.hardware.profiles import DEFAULT_ENGINE, ENGINES, PROFILES
from rooflens.hardware.spec import Spec
from rooflens.hardware.systems import system_ids
from rooflens.model.predict.scenario import (
    DEFAULT_OVERHEAD_BYTES,
    DEFAULT_PREFILL_CHUNK_TOKENS,
    DEFAULT_PROFILE,
)
from rooflens.model.specs.dtypes import ACTIVATION_DTYPES, STORAGE_DTYPES
from rooflens.model.specs.presets import model_ids
from rooflens.model.specs.quant import ENGINE_QUANT_NAMES, NATIVE, QUANT_CHOICES, SCHEMES, quant_id

# The values a choice field may take (None, where a field allows it, means "the default").
CHOICES: dict[str, tuple[str, ...]] = {
    "storage": STORAGE_DTYPES,
    "activation": ACTIVATION_DTYPES,
    "profile": PROFILES,
    "quant": QUANT_CHOICES,
    "engine": ENGINES,
}
# Other spellings a choice set reads, each turned into its own value before any check (the CLI's
# `type`, a request's fields, a link): the engines' names for the precision schemes.
SPELLINGS: dict[str, Callable[[str], str]] = {"quant": quant_id}
# The presets a field may name (a link may name nothing else: no file on the server).
PRESETS: dict[str, Callable[[], list[str]]] = {
    "model": model_ids,
    "gpu": lambda: [*gpu_ids(), *system_ids()],  # a GPU or a system preset (dgx-h100)
}
OVERHEAD_GIB = DEFAULT_OVERHEAD_BYTES / 2**30
# `rooflens memory` sizes one context: --context stands for prompt_len (with output_len 1).
MEMORY_CONTEXT = {"flag": "--context", "default": 2048, "help": "tokens held per sequence"}


def _field(default: Any, description: str, *, ge: float | None = None, **shown: Any) -> Any:
    """A field with its description (unit included), bound and how the faces show it."""
    return Field(default, ge=ge, description=description, json_schema_extra=shown)


class ScenarioRequest(Spec):
    """What one prediction is for, in the user's terms; `api.scenario_of` builds it."""

    model: str = _field(
        ..., "model preset id, spec file or HF config.json",
        flag="--model", label="Model", preset="model",
    )  # fmt: skip
    gpu: str = _field(
        ..., "GPU or system preset id, or a JSON/YAML spec",
        flag="--gpu", label="GPU", preset="gpu",
    )  # fmt: skip
    batch: int = _field(
        1, "concurrent sequences", ge=1,
        flag="--batch", label="Batch (sequences)", unit="sequences", step=1,
    )  # fmt: skip
    prompt_len: int = _field(
        512, "prompt tokens per sequence", ge=1,
        flag="--prompt-len", label="Prompt (tokens)", query="prompt", unit="tokens", step=128,
        memory=MEMORY_CONTEXT,
    )  # fmt: skip
    output_len: int = _field(
        128, "output tokens per sequence", ge=1,
        flag="--output-len", label="Output (tokens)", query="output", unit="tokens", step=64,
        memory=False,
    )  # fmt: skip
    images: int = _field(
        0, "images per prompt (vision-language models): their tokens join the prompt", ge=0,
        flag="--images", label="Images per prompt", unit="images", step=1, memory=False,
    )  # fmt: skip
    quant: str = _field(
        NATIVE, "precision scheme, as engines name it: native (the checkpoint's own format: "
        "bf16; MXFP4 experts with bf16 attention for gpt-oss; FP8-block for DeepSeek-V3), "
        + ", ".join(f"{key} ({s.label}: {s.means})" for key, s in SCHEMES.items())
        + "; the engines' names are read too (" + ", ".join(ENGINE_QUANT_NAMES) + ", in any "
        "case, '_' for '-'); --weight-dtype/--act-dtype override native, and must agree with any "
        "other scheme",
        flag="--quant", label="Precision scheme", choices="quant",
    )  # fmt: skip
    weight_dtype: str | None = _field(
        None, "weight storage dtype (experts; --quant names the schemes); default: the "
        "scheme's, else the model's native dtype", flag="--weight-dtype", label="Weights (expert)",
        query="wdtype", choices="storage",
    )  # fmt: skip
    act_dtype: str | None = _field(
        None, "activation dtype (experts); default: the scheme's, else fp8 with fp8 weights on "
        "GPUs with fp8 units (W8A8-FP8), else bf16", flag="--act-dtype",
        label="Activations (expert)", query="adtype", choices="activation", memory=False,
    )  # fmt: skip
    kv_dtype: str | None = _field(
        None, "KV-cache dtype; default: the activations'",
        flag="--kv-dtype", label="KV cache", query="kvdtype", choices="storage",
    )  # fmt: skip
    group_size: int = _field(
        128, "weights sharing one scale in int8/int4/nf4 quantization", ge=1,
        flag="--group-size", label="Quantization group (weights)", query="group",
        unit="weights", step=32,
    )  # fmt: skip
    tp: int = _field(
        1, "tensor-parallel GPUs", ge=1,
        flag="--tp", label="Tensor-parallel GPUs (TP)", unit="GPUs", step=1,
    )  # fmt: skip
    pp: int = _field(
        1, "pipeline-parallel stages", ge=1,
        flag="--pp", label="Pipeline stages (PP)", unit="stages", step=1,
    )  # fmt: skip
    ep: int = _field(
        1, "expert-parallel degree", ge=1,
        flag="--ep", label="Expert-parallel degree (EP)", unit="GPUs", step=1,
    )  # fmt: skip
    profile: str = _field(
        DEFAULT_PROFILE, "pricing profile: calibrated (efficiencies and per-call overheads "
        "fitted on measured kernels, hardware/calibration/) or ideal (datasheet peaks: the "
        "stated lower bound on time)",
        flag="--profile", label="Profile", choices="profile", memory=False,
    )  # fmt: skip
    engine: str = _field(
        DEFAULT_ENGINE, "serving engine whose measured kernels price `calibrated` (vllm, sglang, "
        "trtllm; hardware/calibration/); `ideal` is the same for every engine",
        flag="--engine", label="Engine", choices="engine", memory=False,
    )  # fmt: skip
    overhead_gb: float | None = _field(
        None, f"runtime memory overhead (CUDA context, workspaces), GB; default {OVERHEAD_GIB:g} "
        "GiB", ge=0, flag="--overhead-gb", label="Runtime overhead (GB)", unit="GB",
    )  # fmt: skip
    prefill_chunk: int = _field(
        DEFAULT_PREFILL_CHUNK_TOKENS, "tokens prefilled at once; sizes activation memory "
        "(0 = no chunking)", ge=0,
        flag="--prefill-chunk", label="Prefill chunk (tokens, 0 = none)", query="chunk",
        unit="tokens",
    )  # fmt: skip
    opts: tuple[str, ...] = _field(
        (), "optimizations, each NAME[:k=v,...] (see `rooflens list optimizations`)",
        flag="--opt", label="Optimizations", query="opt",
    )  # fmt: skip

    def __init__(self, **values: Any) -> None:
        """Checked field by field first, so a bad value reads the same as on the CLI and in a
        link (`bad_value`); what remains (a wrong type, an unknown field) is one line too."""
        values = {name: spelled(type(self), name, value) for name, value in values.items()}
        for name, value in values.items():
            if name in type(self).model_fields:
                problem = value_error(type(self), name, value)
                if problem is not None:
                    raise problem
        try:
            super().__init__(**values)
        except ValidationError as exc:
            known = type(self).model_fields  # an unknown field's message names the one meant
            raise RooflensError(validation_message(exc, "scenario", known)) from None

    def with_(self, **changes: Any) -> Any:
        """A copy with `changes`, checked like a new request."""
        return type(self)(**{**dict(self), **changes})


def meta(field: FieldInfo) -> dict[str, Any]:
    """How the faces show a field (the keys are listed in this module's docstring)."""
    extra = field.json_schema_extra
    return dict(extra) if isinstance(extra, dict) else {}


def lower_bound(field: FieldInfo) -> tuple[float, bool] | None:
    """(the least value, whether it is excluded) from the field's ge/gt, or None."""
    for item in field.metadata:
        if isinstance(item, Ge):
            return float(item.ge), False  # type: ignore[arg-type]
        if isinstance(item, Gt):
            return float(item.gt), True  # type: ignore[arg-type]
    return None


def choices(field: FieldInfo) -> tuple[str, ...] | None:
    name = meta(field).get("choices")
    return None if name is None else CHOICES[name]


def spelling(field: FieldInfo) -> Callable[[str], str] | None:
    """How the field reads its choices' other spellings (SPELLINGS), or None."""
    return SPELLINGS.get(meta(field).get("choices", ""))


def spelled(cls: type[Spec], name: str, value: Any) -> Any:
    """`value` as the field's own choice where it is another spelling of one, else as given."""
    field = cls.model_fields.get(name)
    read = None if field is None else spelling(field)
    return read(value) if read is not None and isinstance(value, str) else value


def flag(cls: type[Spec], name: str) -> str:
    return str(meta(cls.model_fields[name]).get("flag", name))


def bad_value(cls: type[Spec], name: str, value: Any) -> str:
    """'' if `value` is within the field's bounds and choices, else the one-line reason (the
    same on the CLI, in a link and for the schema: `--batch must be ≥ 1, got 0`)."""
    problem = value_error(cls, name, value)
    return "" if problem is None else str(problem)


def value_error(cls: type[Spec], name: str, value: Any) -> FieldError | None:
    """`bad_value`'s reason as a FieldError naming the field (None when the value is good)."""
    field = cls.model_fields[name]
    what = flag(cls, name)
    value = spelled(cls, name, value)
    allowed = choices(field)
    if allowed is not None and isinstance(value, str) and value not in allowed:
        return FieldError(name, f"{{subject}} {value!r} is not one of {', '.join(allowed)}", what)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None  # not a number: the type check says so
    if not math.isfinite(value):
        return FieldError(name, f"{{subject}} must be a finite number, got {value}", what)
    bound = lower_bound(field)
    if bound is not None and (value < bound[0] or (bound[1] and value == bound[0])):
        sign = ">" if bound[1] else "≥"
        return FieldError(name, f"{{subject}} must be {sign} {bound[0]:g}, got {value:g}", what)
    return None


def with_defaults(cls: type[Spec], defaults: Mapping[str, Any], name: str) -> Any:
    """A subclass of `cls` whose fields named in `defaults` default to those values: a face's
    default overrides (the dashboard's 70B model at TP 4) in one table, nothing redeclared."""
    fields: dict[str, Any] = {
        key: (cls.model_fields[key].annotation, FieldInfo.merge_field_infos(
            cls.model_fields[key], default=value))
        for key, value in defaults.items()
    }  # fmt: skip
    return create_model(name, __base__=cls, __module__=cls.__module__, **fields)
