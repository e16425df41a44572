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
    weight_dtype: str = "bf16",
    act_dtype: str = "bf16",
    kv_dtype: str | None = None,
    group_size: int = 128,
    tp: int = 1,
    pp: int = 1,
    ep: int = 1,
    profile: str = "ideal",
    overhead_bytes: float = DEFAULT_OVERHEAD_BYTES,
    prefill_chunk_tokens: int = DEFAULT_PREFILL_CHUNK_TOKENS,
    gpus_per_node: int = 8,
) -> Scenario:
    """A validated scenario. kv_dtype defaults to the activation dtype (what engines do)."""
    spec = model if isinstance(model, ModelSpec) else get_model(model)
    if gpu in system_ids():  # a named box (dgx-h100, …) brings its own links and node size
        system = get_system(gpu)
    else:
        system = default_system(get_gpu(gpu), gpus_per_node)
    try:
        return Scenario(
            model=spec,
            system=system,
            workload=Workload(
                batch=batch,
                prompt_len=prompt_len,
                output_len=output_len,
                prefill_chunk_tokens=prefill_chunk_tokens,
            ),
            precision=Precision(
                weight_dtype=weight_dtype,
                act_dtype=act_dtype,
                kv_dtype=kv_dtype or act_dtype,
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
