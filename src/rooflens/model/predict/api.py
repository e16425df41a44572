"""The one scenario builder of every face (CLI, dashboard, planner, Python API): names and numbers
in, a prediction out.

Turns a ScenarioRequest (model/predict/request.py: preset names or spec files and plain settings)
into a validated Scenario with its optimizations, converting every validation failure into a
one-line RooflensError whose `field` names the request field it is about (a FieldError where the
message names that field, so a face can word it as its control).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from rooflens.hardware.errors import FieldError, RooflensError, validation_message
from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import Profile
from rooflens.hardware.systems import default_system, get_system, system_ids
from rooflens.model.optimizations import parse_opt
from rooflens.model.optimizations.base import Optimization
from rooflens.model.optimizations.sliding_window import streaming_spec
from rooflens.model.predict.predictor import Pipeline
from rooflens.model.predict.request import ScenarioRequest
from rooflens.model.predict.scenario import (
    DEFAULT_OVERHEAD_BYTES,
    Parallelism,
    Precision,
    Scenario,
    Workload,
    fp8_units_needed,
    lacks_fp8,
)
from rooflens.model.predict.steps import Prediction
from rooflens.model.specs.dtypes import default_act_dtype
from rooflens.model.specs.presets import get_model
from rooflens.model.specs.quant import NATIVE, SCHEMES, keeps_block_scales, scheme_of
from rooflens.model.specs.spec import ModelSpec


def make_scenario(model: str | ModelSpec, gpu: str, **fields: Any) -> Scenario:
    """Shorthand for `scenario_of(ScenarioRequest(model=..., gpu=..., **fields))`: `fields` are
    ScenarioRequest's (batch, prompt_len, tp, overhead_gb, prefill_chunk, ...), checked by it.
    `model` may be a spec already built (a derived model: fewer layers, a streaming window)."""
    spec = model if isinstance(model, ModelSpec) else None
    ref = model.id if isinstance(model, ModelSpec) else model
    return scenario_of(ScenarioRequest(model=ref, gpu=gpu, **fields), spec)


def scenario_of(request: ScenarioRequest, spec: ModelSpec | None = None) -> Scenario:
    """The validated scenario a request describes (`spec`, when given, stands for its model).
    weight_dtype defaults to the model's native dtype (routed experts too: gpt-oss keeps mxfp4
    experts) and then act_dtype to what engines pair with those weights on this GPU
    (dtypes.default_act_dtype: DeepSeek-V3 runs W8A8 FP8 on Hopper); an explicit weight_dtype
    keeps 16-bit activations unless act_dtype is given. kv_dtype defaults to the activation
    dtype given, else bf16 (what engines do). `images` per prompt of a vision-language model
    add their tokens to prompt_len (which counts the text)."""
    r = request
    spec = spec or get_model(r.model)
    if r.images and spec.vision is None:
        raise FieldError("images", f"{{subject}}: {spec.id} has no vision encoder", "--images",
                         r.images)  # fmt: skip
    prompt_len = r.prompt_len + (r.images * spec.vision.tokens_per_image if spec.vision else 0)
    # a sliding window may run a model past its context (StreamingLLM): every face admits the
    # same sequences (sliding_window.streaming_spec); its quality assumption is a warning (the
    # CLI prints it on one line, the dashboard shows it on the page)
    parsed = parse_opts(r.opts)
    spec, assumption = streaming_spec(spec, parsed, prompt_len + r.output_len - 1)
    if assumption:
        warnings.warn(assumption, stacklevel=2)
    if r.gpu in system_ids():  # a named box (dgx-h100, …) brings its own links and node size
        system = get_system(r.gpu)
    else:
        system = default_system(get_gpu(r.gpu))
    weight_dtype, act_dtype, expert_dtype, scheme, native = _precision(r, spec, system)
    # KV follows activations the user names; otherwise it stays 16-bit, as vLLM's
    # kv_cache_dtype "auto" keeps it for FP8 checkpoints and quantized weights.
    kv_dtype = r.kv_dtype or r.act_dtype or "bf16"
    overhead = DEFAULT_OVERHEAD_BYTES if r.overhead_gb is None else r.overhead_gb * 1e9
    try:
        return Scenario(
            model=spec,
            system=system,
            workload=Workload(
                batch=r.batch,
                prompt_len=prompt_len,
                output_len=r.output_len,
                prefill_chunk_tokens=r.prefill_chunk,
                images_per_prompt=r.images,
            ),
            precision=Precision(
                weight_dtype=weight_dtype,
                expert_weight_dtype=expert_dtype,
                act_dtype=act_dtype,
                kv_dtype=kv_dtype,
                weight_group_size=r.group_size,
                scheme=scheme,
                native=native,
            ),
            parallel=Parallelism(tp=r.tp, pp=r.pp, ep=r.ep),
            profile=r.profile,
            engine=r.engine,
            overhead_bytes=overhead,
            opts=tuple(r.opts),
        )
    except ValidationError as exc:
        raise _structured(exc, "scenario") from None


def _structured(exc: ValidationError, what: str) -> RooflensError:
    """A scenario's validation error as one RooflensError: the FieldError a check raised (its
    field kept), else pydantic's message, its field read from the error's location."""
    errors = exc.errors(include_url=False)
    cause = errors[0].get("ctx", {}).get("error") if errors else None
    if isinstance(cause, FieldError):
        return cause.with_prefix(f"invalid {what}: ")
    loc = errors[0]["loc"] if errors else ()
    field = str(loc[-1]) if loc and str(loc[-1]) in ScenarioRequest.model_fields else None
    return RooflensError(validation_message(exc, what), field)


def parse_opts(opts: Sequence[str | Optimization]) -> list[Optimization]:
    """The optimizations `opts` name; a bad one is an error about the `opts` field."""
    try:
        return [parse_opt(o) if isinstance(o, str) else o for o in opts]
    except RooflensError as exc:
        raise _about_opts(exc) from None


def _about_opts(exc: RooflensError) -> RooflensError:
    if exc.field is not None:
        return exc
    text = str(exc)
    if text.startswith("--opt "):  # the optimizations' own messages name their flag
        return FieldError("opts", "{subject} " + text.removeprefix("--opt "), "--opt")
    return RooflensError(text, "opts")


def _precision(r: ScenarioRequest, spec: ModelSpec, system: Any) -> tuple[str, str, str, str, bool]:
    """(weights, activations, experts, scheme id, native) of a request. A named scheme
    (`--quant`, model/specs/quant.py SCHEMES) sets both dtypes, and --weight-dtype/--act-dtype
    may only repeat them; `native` keeps the checkpoint's format (gpt-oss: MXFP4 experts),
    which the dtype flags override. Activations default to what engines pair with the weights
    on this GPU (dtypes.default_act_dtype: fp8 weights run W8A8 where fp8 units exist)."""
    units = system.gpu.peak_flops_per_s
    if r.quant != NATIVE:
        s = SCHEMES[r.quant]
        for flag, given, wanted in (("--weight-dtype", r.weight_dtype, s.weight_dtype),
                                    ("--act-dtype", r.act_dtype, s.act_dtype)):  # fmt: skip
            if given is not None and given != wanted:
                raise RooflensError(f"--quant {r.quant} ({s.label}) sets {flag} {wanted}, not "
                                    f"{given}: drop {flag} or pick another --quant")  # fmt: skip
        if s.act_dtype == "fp8" and lacks_fp8(system.gpu):  # the scheme's widget, not the flag
            raise FieldError("quant", fp8_units_needed(system.gpu), "--quant", r.quant)
        return s.weight_dtype, s.act_dtype, "", r.quant, False
    native = r.weight_dtype is None and r.act_dtype is None
    weight = r.weight_dtype or spec.native_weight_dtype
    experts = spec.native_expert_dtype if r.weight_dtype is None else ""
    act = r.act_dtype or default_act_dtype(weight, units)
    block = keeps_block_scales(spec.native_weight_dtype, weight, act)  # quant.py
    return weight, act, experts, scheme_of(weight, act, experts, block), native


def make_pipeline(
    scenario: Scenario,
    opts: Sequence[str | Optimization] | None = None,
    profile: Profile | None = None,
) -> Pipeline:
    """The pipeline of `scenario` under `opts`, by default (None) the optimizations it was built
    with (`make_scenario(..., opts=...)`); the analyses price it under a subset of those
    (`compare`'s waterfall). A bad optimization is an error about `opts`. `profile` prices it
    with those terms instead of the scenario's named profile (Pipeline)."""
    parsed = parse_opts(scenario.opts if opts is None else opts)
    try:
        return Pipeline(scenario, parsed, profile)
    except ValidationError as exc:
        raise _structured(exc, "scenario after optimizations") from None
    except RooflensError as exc:
        raise _about_opts(exc) from None


def run(
    scenario: Scenario,
    opts: Sequence[str | Optimization] | None = None,
    profile: Profile | None = None,
) -> Prediction:
    """The prediction of `scenario` under `opts`, by default the ones it was built with
    (`profile`: priced with those terms instead of its named profile, Pipeline)."""
    return make_pipeline(scenario, opts, profile).predict()
