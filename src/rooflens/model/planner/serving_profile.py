"""Serving profiles: the serving-level terms `rooflens validate serve --fit` fits from a user's
own benchmark (scheduler and host overhead per engine step, the batch the engine really
reached), stored as YAML with their provenance, and applied to a group's cost curves so that
later `rooflens plan --serving-profile FILE` runs use them.

The overhead is a fixed time added to every engine iteration (a decode step, a mixed chunked
step, a lone prefill): the scheduler, sampling, detokenisation and HTTP streaming that the
kernel-level cost model does not price (DESIGN.md: host overhead is a term of its own).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from rooflens.hardware.errors import RooflensError, validated
from rooflens.hardware.presets import read_data_file
from rooflens.model.planner.curves import Curves
from rooflens.model.planner.space import DEFAULT_MAX_BATCHES

KIND = "rooflens-serving-profile"


class ServingProfile(BaseModel):
    """Fitted serving terms of one engine on one deployment, with where they come from."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    kind: str = KIND
    engine: str = Field(description="vllm or sglang: whose benchmark the terms were fitted to")
    model: str
    gpu: str
    tp: int = Field(default=1, ge=1)
    mode: str = Field(description="the scheduler replayed (colocated or chunked)")
    step_overhead_s: float = Field(ge=0, description="host/scheduler time per engine step, s")
    max_batch: int = Field(ge=1, description="the batch cap that reproduces the measured TTFT")
    measured_mean_concurrency: float = Field(
        ge=0, description="requests in flight on average (Little: Σ latency / duration)"
    )
    fit: dict[str, float] = Field(default_factory=dict, description="errors before and after")
    provenance: dict[str, Any] = Field(default_factory=dict)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(), sort_keys=False)


def read_profile(path: str | Path) -> ServingProfile:
    data = read_data_file(Path(path))
    if data.get("kind") != KIND:
        raise RooflensError(
            f"{path} is not a serving profile (kind: {KIND}); make one with "
            "`rooflens validate serve RESULT --model M --gpu G --fit --out FILE`"
        )
    return validated(ServingProfile, data, f"serving profile {path}")


def with_step_overhead(c: Curves, overhead_s: float) -> Curves:
    """The curves with `overhead_s` added to every engine iteration: a decode iteration of
    τ tokens per sequence costs overhead/τ per token; a prefill is one more iteration."""
    if overhead_s == 0:
        return c
    return dataclasses.replace(
        c,
        decode_s=c.decode_s + overhead_s / c.tokens_per_step,
        prefill_s=c.prefill_s + overhead_s,
        prefill_p99_s=c.prefill_p99_s + overhead_s,
        prefill_grid_s=c.prefill_grid_s + overhead_s,
        step_overhead_s=c.step_overhead_s + overhead_s,
    )


def profile_terms(
    path: str, caps: tuple[int, ...] | None, opts: Sequence[str], engines: Sequence[str] = ()
) -> dict[str, Any]:
    """SweepSpace fields from a serving profile (validate serve --fit): its step overhead, and
    batch caps no larger than the batch the engine was found to run. That overhead is the
    engine's host time per step already: `eager-launch` beside it would count it twice; and it
    is one engine's: a search over several engines would charge it to the others as well."""
    for o in (o for o in opts if o.split(":", 1)[0] == "eager-launch"):
        raise RooflensError(
            "--serving-profile's fitted step overhead already holds the engine's host time per "
            f"step; drop --opt {o} (it would count it twice)"
        )

    prof = read_profile(path)
    others = [e for e in engines if e != prof.engine]
    if len(engines) > 1 and others:
        raise RooflensError(
            f"--serving-profile {path} holds {prof.engine}'s host time per step, which would "
            f"be charged to {', '.join(others)} as well; search one engine (--engine "
            f"{prof.engine}) with it"
        )
    kept = tuple(b for b in (caps or DEFAULT_MAX_BATCHES) if b <= prof.max_batch)
    return {"step_overhead_s": prof.step_overhead_s, "serving_profile": path,
            "max_batches": kept or (prof.max_batch,)}  # fmt: skip
