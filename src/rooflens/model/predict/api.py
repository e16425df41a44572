"""One entry point for the CLI and the dashboard: names and numbers in, a prediction out.

Turns a ScenarioRequest (model/predict/request.py: preset names or spec files and plain settings)
into a
validated Scenario with its optimizations, converting every validation failure into a one-line
RooflensError.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from rooflens.hardware.errors import RooflensError, validation_message
from rooflens.hardware.presets import default_system, get_gpu
from rooflens.hardware.systems import get_system, system_ids
from rooflens.model.optimizations import Optimization, parse_opt
from rooflens.model.predict.predictor import Pipeline
from rooflens.model.predict.request import ScenarioRequest
from rooflens.model.predict.scenario import (
    DEFAULT_OVERHEAD_BYTES,
    Parallelism,
    Precision,
    Scenario,
    Workload,
)
from rooflens.model.predict.steps import Prediction
from rooflens.model.specs.dtypes import default_act_dtype
from rooflens.model.specs.presets import get_model
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
    if r.gpu in system_ids():  # a named box (dgx-h100, …) brings its own links and node size
        system = get_system(r.gpu)
    else:
        system = default_system(get_gpu(r.gpu))
    if r.images and spec.vision is None:
        raise RooflensError(f"--images {r.images}: {spec.id} has no vision encoder")
    prompt_len = r.prompt_len + (r.images * spec.vision.tokens_per_image if spec.vision else 0)
    native = r.weight_dtype is None
    expert_dtype = spec.native_expert_dtype if native else ""
    weight_dtype = r.weight_dtype or spec.native_weight_dtype
    # KV follows activations the user names; with the native recipe it stays 16-bit, as
    # vLLM's kv_cache_dtype "auto" keeps it for FP8 checkpoints.
    kv_dtype = r.kv_dtype or r.act_dtype or "bf16"
    act_dtype = r.act_dtype
    if act_dtype is None:
        native_act = default_act_dtype(weight_dtype, system.gpu.peak_flops_per_s)
        act_dtype = native_act if native else "bf16"
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
            ),
            parallel=Parallelism(tp=r.tp, pp=r.pp, ep=r.ep),
            profile=r.profile,
            engine=r.engine,
            overhead_bytes=overhead,
        )
    except ValidationError as exc:
        raise RooflensError(validation_message(exc, "scenario")) from None


def make_pipeline(scenario: Scenario, opts: Sequence[str | Optimization] = ()) -> Pipeline:
    parsed = [parse_opt(o) if isinstance(o, str) else o for o in opts]
    try:
        return Pipeline(scenario, parsed)
    except ValidationError as exc:
        raise RooflensError(validation_message(exc, "scenario after optimizations")) from None


def run(scenario: Scenario, opts: Sequence[str | Optimization] = ()) -> Prediction:
    return make_pipeline(scenario, opts).predict()
