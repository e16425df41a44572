"""The data types of a prediction, below the pipeline, memory, optimizations and pipeline
parallelism, which all import them and never each other in a loop (DESIGN.md "One fact, one
place"):

- `Step`: one forward step (phase, B sequences, T new tokens, L positions attended);
- `decode_kv_lens`: the KV lengths of the decode steps a prediction prices;
- `PhaseResult`, `MemoryBreakdown`, `Prediction`: what `Pipeline.predict` returns;
- `StepTiming`: step times on arrays, what an optimization's `timing` hook transforms
  (model/optimizations/_timing.py);
- `StepPricer`: what hooks, memory and pipeline parallelism may ask of the pipeline running them
  (model/predict/predictor.py's `Pipeline` is the one implementation).

TPOT averages over decode steps 1..O−1, step i attending over P + i positions (DESIGN.md). Steps
are priced exactly up to MAX_DECODE_SAMPLES, else at that many evenly spaced steps (each op's
time is piecewise linear in L, so the sampled mean is within rounding of the exact one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from rooflens.hardware.profiles import Profile
from rooflens.model.ops.op import Num, Op
from rooflens.model.predict.scenario import Scenario, Workload, priced_by
from rooflens.model.pricing.frame import call_columns, to_frame
from rooflens.model.pricing.roofline import PricedOp

MAX_DECODE_SAMPLES = 512


@dataclass(frozen=True)
class Step:
    """One forward step: B sequences, T new tokens each, attention over L positions."""

    phase: str
    B: Num
    T: Num
    L: Num
    lm_tokens: Num = 1.0


def decode_kv_lens(w: Workload) -> np.ndarray:
    """KV lengths of decode steps 1..O−1 (token i+1 attends over P + i positions)."""
    n_steps = w.output_len - 1
    if n_steps <= MAX_DECODE_SAMPLES:
        return np.arange(1, n_steps + 1, dtype=np.float64) + w.prompt_len
    return np.linspace(1, n_steps, MAX_DECODE_SAMPLES) + w.prompt_len


@dataclass(frozen=True)
class PhaseResult:
    phase: str
    priced: list[PricedOp]
    time_s: float  # one step (prefill) or the mean decode step
    flops: float
    bytes: float

    @property
    def bound(self) -> str:
        """What bounds the phase: the kind of op that takes most of its time."""
        shares: dict[str, float] = {}
        for p in self.priced:
            shares[p.bound] = shares.get(p.bound, 0.0) + float(np.mean(p.total_s))
        return max(shares, key=lambda k: shares[k]) if shares else "memory"

    def to_dict(self) -> dict[str, Any]:
        return {
            "time_s": self.time_s,
            "flops": self.flops,
            "bytes": self.bytes,
            "bound": self.bound,
        }


def phase_result(name: str, priced: list[PricedOp], time_s: float) -> PhaseResult:
    """A phase's priced ops with its time, FLOPs and bytes (means over the grid, × count)."""
    flops = sum(float(np.mean(p.op.flops)) * p.op.count for p in priced)
    moved = sum(float(np.mean(p.op.bytes)) * p.op.count for p in priced)
    return PhaseResult(name, priced, time_s, flops, moved)


@dataclass(frozen=True)
class MemoryBreakdown:
    """Memory per GPU (model/predict/memory.py computes it)."""

    weights_bytes: float
    kv_cache_bytes: float
    kv_bytes_per_token: float
    activation_bytes: float
    overhead_bytes: float
    capacity_bytes: float
    max_batch: int
    extra_bytes: float = 0.0  # added by optimizations (e.g. a draft model), already in total

    @property
    def total_bytes(self) -> float:
        return (
            self.weights_bytes
            + self.kv_cache_bytes
            + self.activation_bytes
            + self.overhead_bytes
            + self.extra_bytes
        )

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.capacity_bytes

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(total_bytes=self.total_bytes, fits=self.fits)
        return out

    def to_frame(self) -> Any:
        """One row per part held in memory (bytes per GPU), then the total and the capacity."""
        import pandas as pd

        parts = ("weights", "kv_cache", "activation", "overhead", "extra", "total", "capacity")
        return pd.DataFrame({"part": parts, "bytes": [getattr(self, f"{p}_bytes") for p in parts]})


@dataclass(frozen=True)
class Prediction:
    scenario: Scenario
    prefill: PhaseResult
    decode: PhaseResult
    ttft_s: float
    tpot_s: float
    e2e_s: float
    memory: MemoryBreakdown
    notes: list[str] = field(default_factory=list)
    # The step times the last `timing`-defined `result` hook wrote (model/optimizations/_timing.py),
    # so the next hook continues from them (τ, the iteration's rows, a copy or host term
    # included) as the planner's chain of `timing` hooks does; None: rebuild from the figures.
    timing: StepTiming | None = None

    @property
    def output_tokens_per_s(self) -> float:
        w = self.scenario.workload
        return w.batch * w.output_len / self.e2e_s

    @property
    def e2e_per_output_token_s(self) -> float:
        """The inclusive per-token latency e2e / O (TTFT included), labelled as such."""
        return self.e2e_s / self.scenario.workload.output_len

    def to_frame(self) -> Any:
        """The per-operator table of the prefill and the mean decode step (`ops_frame`)."""
        return self.ops_frame()

    def ops_frame(self) -> Any:
        import pandas as pd

        return pd.concat(
            [to_frame(self.prefill.priced), to_frame(self.decode.priced)], ignore_index=True
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data of the prediction, from the figures it holds (nothing is priced again; whether
        each row's call re-prices to its time is model/pricing/reprice.py's `call_exact`)."""
        ops = self.ops_frame()
        sc = self.scenario
        priced = self.prefill.priced + self.decode.priced
        return {
            "model": sc.model.id,
            "gpu": sc.gpu.id,
            "profile": sc.profile,
            "priced_by": priced_by(sc.profile, sc.engine, sc.gpu),
            "batch": sc.workload.batch,
            "prompt_len": sc.workload.prompt_len,
            "output_len": sc.workload.output_len,
            "precision": sc.precision.model_dump(),
            "tp": sc.parallel.tp,
            "ttft_s": self.ttft_s,
            "tpot_s": self.tpot_s,
            "e2e_s": self.e2e_s,
            "e2e_per_output_token_s": self.e2e_per_output_token_s,
            "output_tokens_per_s": self.output_tokens_per_s,
            "prefill": self.prefill.to_dict(),
            "decode": self.decode.to_dict(),
            "memory": self.memory.to_dict(),
            "ops": [
                {
                    **call_columns(p.op),  # the kernel call the row stands for (model/ops/op.py)
                    "name": r.name,
                    "phase": r.phase,
                    "count": int(r.count),
                    "flops": float(r.flops),
                    "bytes": float(r.bytes),
                    "intensity": None if np.isnan(r.intensity) else float(r.intensity),
                    "time_s": float(r.time_s),
                    "bound": r.bound,
                }
                for r, p in zip(ops.itertuples(), priced, strict=True)
            ],
            "notes": self.notes,
        }


TIMED_FIELDS = frozenset({"prefill", "decode", "ttft_s", "tpot_s", "e2e_s"})


def with_updates(pred: Prediction, **changes: Any) -> Prediction:
    """A copy of a prediction with fields replaced (for `result` hooks). New times without a
    new `timing` leave the old one stale, so it is dropped."""
    if "timing" not in changes and TIMED_FIELDS & changes.keys():
        changes["timing"] = None
    return replace(pred, **changes)


@dataclass(frozen=True)
class StepTiming:
    """Step times on arrays (model/optimizations/_timing.py says how hooks use them)."""

    batch: Num  # sequences per decode step
    kv_lens: Num  # positions attended by each decode step (P + i)
    prefill_batch: Num  # prompts per prefill step
    prompt_tokens: Num  # prompt tokens the target prefills
    prompt_tokens_in: Num  # prompt tokens the request carried (before prompt compression)
    prefill_priced: list[PricedOp]
    prefill_s: Num  # time to first token
    decode_priced: list[PricedOp]
    decode_step_s: Num  # one decode step, or one draft-and-verify iteration
    tokens_per_step: float = 1.0  # tokens each sequence gains per step (τ)
    rows_per_sequence: float = 1.0  # new tokens per sequence the target step is fed (width)

    @property
    def tpot_s(self) -> Num:
        """Time per output token at each KV length."""
        return self.decode_step_s / self.tokens_per_step


class StepPricer(Protocol):
    """The pipeline as its optimizations' hooks, memory and pipeline parallelism see it: the
    (transformed) scenario, the optimizations in force, the profile, and pricing of any step."""

    @property
    def scenario(self) -> Scenario: ...

    @property
    def profile(self) -> Profile: ...

    @property
    def opts(self) -> Sequence[Any]:
        """The Optimization instances in order (model/optimizations/base.py sits above)."""
        ...

    def step_ops(self, step: Step, sc: Scenario | None = None) -> list[Op]: ...

    def price_step(self, step: Step, sc: Scenario | None = None) -> list[PricedOp]: ...

    def decode_kv_lens(self) -> np.ndarray: ...

    def for_scenario(self, sc: Scenario, opts: Sequence[Any]) -> StepPricer:
        """A pricer of the same kind for another scenario (a draft model): hooks build one
        through this, never by importing the pipeline that runs them."""
        ...
