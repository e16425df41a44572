"""What the planner searches (SweepSpace): every tuple is a dimension of the grid that sweep.py
walks. Below grid.py, mixed.py and sweep.py, which all read it."""

from __future__ import annotations

import itertools
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import DEFAULT_ENGINE, ENGINES
from rooflens.model.planner.curves import Group
from rooflens.model.planner.serving import CHUNK_TOKENS, MODES
from rooflens.model.predict.scenario import DEFAULT_OVERHEAD_BYTES, DEFAULT_PROFILE
from rooflens.model.specs.dtypes import default_act_dtype

DEFAULT_MAX_BATCHES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


class SweepSpace(BaseModel):
    """What to search over. Every tuple is a dimension of the grid."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    gpus: tuple[str, ...]
    tp: tuple[int, ...] = (1, 2, 4, 8)
    pp: tuple[int, ...] = (1,)
    ep: tuple[int, ...] = (1,)
    weight_dtypes: tuple[str, ...] = ("bf16", "fp8")
    kv_dtypes: tuple[str, ...] = ("bf16", "fp8")
    max_batches: tuple[int, ...] = DEFAULT_MAX_BATCHES
    modes: tuple[str, ...] = MODES
    max_gpus: int = Field(default=64, gt=0)
    chunk_tokens: int = Field(
        default=CHUNK_TOKENS, gt=0, description="chunked prefill token budget"
    )
    profile: str = DEFAULT_PROFILE
    engines: tuple[str, ...] = Field(
        default=(DEFAULT_ENGINE,),
        description="serving engines whose kernels price `calibrated`, searched like TP",
    )
    opts: tuple[str, ...] = ()
    sweep_opts: tuple[str, ...] = Field(default=(), description="each tried on and off")
    overhead_bytes: float = DEFAULT_OVERHEAD_BYTES
    step_overhead_s: float = Field(default=0.0, ge=0, description="host time per engine step")
    serving_profile: str | None = Field(default=None, description="where step_overhead_s is from")
    prefill_gpus: tuple[str, ...] = Field(default=(), description="mixed pairs: prefill side")
    decode_gpus: tuple[str, ...] = Field(default=(), description="mixed pairs: decode side")
    kv_offload: Literal["none", "host", "nvme"] = Field(
        default="none", description="where the prefix cache lives below HBM (kv_tiers.py)"
    )
    objective: Literal["cost", "goodput-per-dollar"] = Field(
        default="cost", description="rank by cost per hour, or by goodput per dollar"
    )

    @field_validator("modes")
    @classmethod
    def _modes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [m for m in value if m not in MODES]
        if bad:
            raise ValueError(f"unknown scheduler '{bad[0]}': use {', '.join(MODES)}")
        return value

    @field_validator("engines")
    @classmethod
    def _engines(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """Known engines, each once, in ENGINES' order: the order they are given in changes
        nothing, and configurations that tie (every engine under `ideal`) keep that order."""
        bad = [e for e in value if e not in ENGINES]
        if bad or not value:
            raise ValueError(f"unknown engine '{bad[0] if bad else ''}': use {', '.join(ENGINES)}")
        return tuple(e for e in ENGINES if e in value)

    @classmethod
    def default(cls, name: str) -> Any:
        """A field's default: the one place the planner's defaults are stated (the CLI's
        options and the dashboard's planner form start from them)."""
        return cls.model_fields[name].default

    def groups(self) -> list[Group]:
        """Every combination; EP only as a multiple of TP (each EP GPU holds whole experts and
        attention runs on ep/tp TP groups), and only what fits in max_gpus. The engine varies
        fastest, so one engine's groups come in the order they always had."""
        variants = [
            tuple(self.opts) + tuple(o for o, on in zip(self.sweep_opts, flags, strict=True) if on)
            for flags in itertools.product((False, True), repeat=len(self.sweep_opts))
        ]
        out = []
        gpus = tuple(dict.fromkeys((*self.gpus, *self.prefill_gpus, *self.decode_gpus)))
        for gpu, tp, pp, ep, w, kv, opts, engine in itertools.product(
            gpus, self.tp, self.pp, self.ep, self.weight_dtypes, self.kv_dtypes, variants,
            self.engines,
        ):  # fmt: skip
            group = Group(gpu, tp, pp, ep, w, act_dtype(gpu, w), kv, opts, engine)
            if (ep == 1 or ep % tp == 0) and group.gpus_per_replica <= self.max_gpus:
                out.append(group)
        return out


def act_dtype(gpu: str, weight_dtype: str) -> str:
    """fp8 weights run W8A8-FP8 where the GPU has fp8 units, else weight-only (bf16 math)."""
    return default_act_dtype(weight_dtype, get_gpu(gpu).peak_flops_per_s)
