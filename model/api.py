"""One entry point for the CLI and the dashboard: names and numbers in, a prediction out.

Turns preset names (or spec files) and plain settings into a validated Scenario with its
optimizations, converting every validation failure into a one-line RooflensError.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from hardware.errors import RooflensError, validation_message
from hardware.presets import default_system, get_gpu
from hardware.systems import get_system, system_ids
from model.dtypes import default_act_dtype
from model.optimizations import Optimization, parse_opt
from model.pipeline import Pipeline
from model.presets import get_model
from model.scenario import (
    DEFAULT_OVERHEAD_BYTES,
    DEFAULT_PREFILL_CHUNK_TOKENS,
    Parallelism,
    Precision,
    Scenario,
    Workload,
)
from model.spec import ModelSpec
from model.steps import Prediction


def make_scenario(
    model: str | ModelSpec,
    gpu: str,
    *,
    batch: int = 1,
    prompt_len: int = 512,
    output_len: int = 128,
    weight_dtype: str | None = None,
    act_dtype: str | None = None,
    kv_dtype: str | None = None,
    group_size: int = 128,
    tp: int = 1,
    pp: int = 1,
    ep: int = 1,
    profile: str = "ideal",
    overhead_bytes: float = DEFAULT_OVERHEAD_BYTES,
    prefill_chunk_tokens: int = DEFAULT_PREFILL_CHUNK_TOKENS,
    gpus_per_node: int = 8,
    images: int = 0,
) -> Scenario:
    """A validated scenario. weight_dtype defaults to the model's native dtype (routed experts
    too: gpt-oss keeps mxfp4 experts) and then act_dtype to what engines pair with those weights
    on this GPU (dtypes.default_act_dtype: DeepSeek-V3 runs W8A8 FP8 on Hopper); an explicit
    weight_dtype keeps 16-bit activations unless act_dtype is given. kv_dtype defaults to the
    activation dtype given, else bf16 (what engines do). `images` per prompt of a
    vision-language model add their tokens to prompt_len (which counts the text)."""
    spec = model if isinstance(model, ModelSpec) else get_model(model)
    if gpu in system_ids():  # a named box (dgx-h100, …) brings its own links and node size
        system = get_system(gpu)
    else:
        system = default_system(get_gpu(gpu), gpus_per_node)
    if images < 0:
        raise RooflensError(f"--images must be ≥ 0, got {images}")
    if images and spec.vision is None:
        raise RooflensError(f"--images {images}: {spec.id} has no vision encoder")
    if spec.vision:
        prompt_len += images * spec.vision.tokens_per_image
    native = weight_dtype is None
    expert_dtype = spec.native_expert_dtype if native else ""
    weight_dtype = weight_dtype or spec.native_weight_dtype
    # KV follows activations the user names; with the native recipe it stays 16-bit, as
    # vLLM's kv_cache_dtype "auto" keeps it for FP8 checkpoints.
    kv_dtype = kv_dtype or act_dtype or "bf16"
    if act_dtype is None:
        native_act = default_act_dtype(weight_dtype, system.gpu.peak_flops_per_s)
        act_dtype = native_act if native else "bf16"
    try:
        return Scenario(
            model=spec,
            system=system,
            workload=Workload(
                batch=batch,
                prompt_len=prompt_len,
                output_len=output_len,
                prefill_chunk_tokens=prefill_chunk_tokens,
                images_per_prompt=images,
            ),
            precision=Precision(
                weight_dtype=weight_dtype,
                expert_weight_dtype=expert_dtype,
                act_dtype=act_dtype,
                kv_dtype=kv_dtype,
                weight_group_size=group_size,
            ),
            parallel=Parallelism(tp=tp, pp=pp, ep=ep),
            profile=profile,
            overhead_bytes=overhead_bytes,
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
