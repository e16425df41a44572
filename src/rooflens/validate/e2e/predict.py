"""What `validate e2e` checks against: the model's prediction for the run, and whether it fits.

Prediction through the public API (model/predict/api.py `make_scenario` / `make_pipeline`, priced
per
step as the pipeline prices it): prefill of `context` tokens for `batch` sequences (TTFT; in
steps of whole prompts of at most DEFAULT_PREFILL_CHUNK_TOKENS tokens together, as the run takes
them, so batch 256 at 8k context needs no 2M-token activations) and one
decode step with `context` tokens in the cache (TPOT; the step attends over context + 1
positions), with per-operator times summed over layers. On top, model/pricing/host.py's host term
as an
op named `host`: eager launches × the per-launch cost, or one launch when the step is a CUDA
graph; on a GPU only what exceeds the device's busy time shows, on the CPU all of it.

The run and the prediction use one dtype, `--dtype`: the decoder's random weights (experts
included), activations and KV cache are in it, and so is the scenario (`run_scenario`), even
where the preset's native checkpoint differs (gpt-oss's MXFP4 experts, DeepSeek-V3's FP8): e2e
checks the model it can build in torch, priced as that model.

Memory is checked with model/predict/memory.py for the run as it will execute (its `--layers`
depth, a
cache of context + 1 positions, its largest prefill step) against what the device has free,
before anything is allocated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rooflens.hardware.errors import RooflensError
from rooflens.model.predict.api import make_pipeline, make_scenario
from rooflens.model.predict.scenario import (
    DEFAULT_OVERHEAD_BYTES,
    DEFAULT_PREFILL_CHUNK_TOKENS,
    Scenario,
)
from rooflens.model.predict.steps import Step
from rooflens.model.pricing.host import (
    HOST_OP,
    exposed_host_s,
    host_time_s,
    launches,
    unsplit_if_host_bound,
)
from rooflens.model.specs.spec import ModelSpec
from rooflens.validate.e2e.layout import with_layers

# Operators repeated per layer (scaled by depth under --layers); the rest run once per step,
# and so does a vision-language model's encoder (built whole whatever --layers says).
WHOLE_OPS = ("embed", "norm.final", "lm_head", HOST_OP)
VISION_PREFIX = "vision."


def is_whole(name: str) -> bool:
    """Whether operator `name` runs at full size whatever --layers says (not scaled by depth)."""
    return name in WHOLE_OPS or name.startswith(VISION_PREFIX)


@dataclass(frozen=True)
class PhasePrediction:
    phase: str  # "prefill" | "decode"
    total_s: float  # the step's time, host term included
    ops: dict[str, float] = field(default_factory=dict)  # name -> s per step (all layers)
    launches: int = 0


@dataclass(frozen=True)
class RunSetup:
    """One run's facts the prediction needs."""

    spec: ModelSpec
    gpu_ref: str  # preset id or spec file (the CPU's measured spec)
    profile: str  # "ideal" | "calibrated"
    dtype: str
    per_launch_s: float
    overlapped: bool  # the host runs ahead of an accelerator (GPU), or computes itself (CPU)
    images: int = 0  # images per prompt (a vision-language model), inside `context`


def run_scenario(
    setup: RunSetup, batch: int, context: int, layers: int = 0, **extra: Any
) -> Scenario:
    """The scenario a run is predicted and memory-checked as (model/predict/api.py): its spec with
    room
    for context + 1 positions (at `layers` depth, layout.with_layers; 0 = all) and ONE dtype,
    the run's `--dtype`, for weights, routed experts, activations and the KV cache alike. An
    explicit weight dtype drops a preset's native recipe (gpt-oss's MXFP4 experts, DeepSeek's
    FP8), so the prediction prices the bf16 (or fp16, fp32) model the run builds. With images,
    `context` counts their tokens: the text is the rest."""
    spec = _runnable(setup.spec, context)
    return make_scenario(
        with_layers(spec, layers) if layers else spec,
        setup.gpu_ref,
        batch=batch,
        prompt_len=context - image_tokens(setup.spec, setup.images, context),
        images=setup.images,
        weight_dtype=setup.dtype,
        act_dtype=setup.dtype,
        kv_dtype=setup.dtype,
        profile=setup.profile,
        **extra,
    )


def image_tokens(spec: ModelSpec, images: int, context: int) -> int:
    """Prompt positions `images` images take; a one-line error when none are left for text."""
    if images < 0:
        raise RooflensError(f"--images must be ≥ 0, got {images}")
    if not images:
        return 0
    if spec.vision is None:
        raise RooflensError(f"--images {images}: {spec.id} has no vision encoder")
    tokens = images * spec.vision.tokens_per_image
    if tokens >= context:
        raise RooflensError(
            f"--context {context} must exceed the {tokens} tokens of {images} image(s) "
            f"({spec.vision.tokens_per_image} each), which it includes"
        )
    return tokens


def predict_phase(
    setup: RunSetup, phase: str, batch: int, context: int, graphed: bool
) -> PhasePrediction:
    """Predicted time of one prefill (phase 'prefill') or one decode step ('decode')."""
    pipeline = make_pipeline(run_scenario(setup, batch, context, output_len=1))
    P = float(context)
    if phase == "prefill":  # each chunk of sequences as the step the run takes
        steps = [Step("prefill", float(b), P, P) for b in prefill_chunks(batch, context)]
    else:
        steps = [Step("decode", float(batch), 1.0, P + 1.0)]
    priced = [p for step in steps for p in pipeline.price_step(step)]
    if not graphed:  # eagerly, split decode attention runs unsplit where the host bounds it
        sc = pipeline.scenario
        priced, _ = unsplit_if_host_bound(priced, float(sum(float(p.total_s) for p in priced)),
                                          setup.per_launch_s, sc.system, pipeline.profile,
                                          setup.overlapped)  # fmt: skip
    ops: dict[str, float] = {}
    for p in priced:
        ops[p.op.name] = ops.get(p.op.name, 0.0) + float(p.total_s)
    device_s = sum(ops.values())
    raw_ops = [p.op for p in priced]
    host_s = host_time_s(raw_ops, setup.per_launch_s, graphed)
    ops[HOST_OP] = exposed_host_s(host_s, device_s, setup.overlapped)
    return PhasePrediction(phase, device_s + ops[HOST_OP], ops, launches(raw_ops))


def prefill_chunks(batch: int, context: int) -> list[int]:
    """Sequences per prefill step: whole prompts, as many as fit in DEFAULT_PREFILL_CHUNK_TOKENS
    (vLLM's max_num_batched_tokens, model/predict/scenario.py), at least one. TTFT is their sum."""
    group = max(1, DEFAULT_PREFILL_CHUNK_TOKENS // context)
    return [min(group, batch - first) for first in range(0, batch, group)]


def _runnable(spec: ModelSpec, context: int) -> ModelSpec:
    """The spec with room for the decode step's extra position (context + 1)."""
    if spec.max_context > context:
        return spec
    return spec.model_copy(update={"max_context": context + 1})


def memory_needed_bytes(
    setup: RunSetup, batch: int, context: int, layers: int, overhead_bytes: float
) -> float:
    """Bytes the run takes with `layers` decoder layers (model/predict/memory.py)."""
    sc = run_scenario(
        setup,
        batch,
        context,
        layers=layers,
        output_len=2,
        overhead_gb=overhead_bytes / 1e9,
        prefill_chunk=prefill_chunks(batch, context)[0] * context,  # the largest step
    )
    return make_pipeline(sc).memory().total_bytes


def check_memory(
    setup: RunSetup,
    batch: int,
    context: int,
    layers: int,
    free_bytes: float,
    where: str,
    overhead_bytes: float = DEFAULT_OVERHEAD_BYTES,
) -> float:
    """The bytes the run needs; a one-line RooflensError when they exceed `free_bytes`."""
    need = memory_needed_bytes(setup, batch, context, layers, overhead_bytes)
    if need <= free_bytes:
        return need
    fits = [
        n
        for n in _halvings(layers)
        if memory_needed_bytes(setup, batch, context, n, overhead_bytes) <= free_bytes
    ]
    hint = f"use --layers {fits[0]}" if fits else "use a smaller --batch or --context"
    raise RooflensError(
        f"{setup.spec.id} with {layers} layers at batch {batch}, context "
        f"{context} needs {need / 1e9:.1f} GB but {where} has "
        f"{free_bytes / 1e9:.1f} GB free: {hint}"
    )


def _halvings(layers: int) -> list[int]:
    out, n = [], layers // 2
    while n >= 1:
        out.append(n)
        n //= 2
    return out
