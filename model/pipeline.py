"""The cost pipeline (DESIGN.md): scenario -> optimizations -> operator tables -> roofline
pricing -> phase times -> TTFT, TPOT, end-to-end latency and throughput.

TTFT = prefill time (the last token's logits included; sampling is negligible at this grain).
TPOT = mean decode-step time over output tokens 2..O, step i attending over P + i positions
(DESIGN.md); it averages over the growing KV length instead of taking the final length. Steps
are priced exactly up to MAX_DECODE_SAMPLES, else at that many evenly spaced steps (each op's
time is piecewise linear in L, so the sampled mean is within rounding of the exact one).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from hardware.profiles import Profile, get_profile
from model.memory import MemoryBreakdown, memory_breakdown
from model.ops import Num, Op, build_ops
from model.optimizations import Optimization, ordered
from model.pricing import PricedOp, call_columns, price_ops, step_time_s, to_frame
from model.reprice import call_exact
from model.scenario import Scenario

MAX_DECODE_SAMPLES = 512


@dataclass(frozen=True)
class Step:
    """One forward step: B sequences, T new tokens each, attention over L positions."""

    phase: str
    B: Num
    T: Num
    L: Num
    lm_tokens: Num = 1.0


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

    @property
    def output_tokens_per_s(self) -> float:
        w = self.scenario.workload
        return w.batch * w.output_len / self.e2e_s

    @property
    def e2e_per_output_token_s(self) -> float:
        """The inclusive per-token latency e2e / O (TTFT included), labelled as such."""
        return self.e2e_s / self.scenario.workload.output_len

    def ops_frame(self) -> Any:
        import pandas as pd

        return pd.concat(
            [to_frame(self.prefill.priced), to_frame(self.decode.priced)], ignore_index=True
        )

    def to_dict(self) -> dict[str, Any]:
        ops = self.ops_frame()
        sc = self.scenario
        priced = self.prefill.priced + self.decode.priced
        exact = call_exact(priced, sc.system, get_profile(sc.profile, sc.gpu))
        return {
            "model": sc.model.id,
            "gpu": sc.gpu.id,
            "profile": sc.profile,
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
                    **call_columns(p.op),  # the kernel call the row stands for (model/op.py)
                    "call_exact": same,  # does that call re-price to time_s (model/reprice.py)
                    "name": r.name,
                    "phase": r.phase,
                    "count": int(r.count),
                    "flops": float(r.flops),
                    "bytes": float(r.bytes),
                    "intensity": None if np.isnan(r.intensity) else float(r.intensity),
                    "time_s": float(r.time_s),
                    "bound": r.bound,
                }
                for r, p, same in zip(ops.itertuples(), priced, exact, strict=True)
            ],
            "notes": self.notes,
        }


class Pipeline:
    """Runs a scenario through its optimizations. Build one per scenario; call `predict()`."""

    def __init__(self, scenario: Scenario, optimizations: list[Optimization] | None = None):
        self.opts = ordered(list(optimizations or []))
        sc = scenario
        for opt in self.opts:
            sc = opt.scenario(sc)
        self.scenario = sc
        self.profile: Profile = get_profile(sc.profile, sc.gpu)

    def step_ops(self, step: Step, sc: Scenario | None = None) -> list[Op]:
        sc = sc or self.scenario
        ops = build_ops(sc, step.phase, step.B, step.T, step.L, step.lm_tokens)
        for opt in self.opts:
            ops = opt.ops(ops, sc, step)
        return ops

    def price_step(self, step: Step, sc: Scenario | None = None) -> list[PricedOp]:
        sc = sc or self.scenario
        return price_ops(self.step_ops(step, sc), sc.system, self.profile)

    def decode_kv_lens(self) -> np.ndarray:
        """KV lengths of decode steps 1..O−1 (token i+1 attends over P + i positions)."""
        w = self.scenario.workload
        n_steps = w.output_len - 1
        if n_steps <= MAX_DECODE_SAMPLES:
            return np.arange(1, n_steps + 1, dtype=np.float64) + w.prompt_len
        return np.linspace(1, n_steps, MAX_DECODE_SAMPLES) + w.prompt_len

    def memory(self) -> MemoryBreakdown:
        return memory_breakdown(self.scenario, self)

    def predict(self) -> Prediction:
        sc, w = self.scenario, self.scenario.workload
        B, P = float(w.batch), float(w.prompt_len)
        prefill = self.price_step(Step("prefill", B, P, P))
        prefill_s = float(step_time_s(prefill))
        kv_lens = self.decode_kv_lens()
        if kv_lens.size:
            decode = self.price_step(Step("decode", B, 1.0, kv_lens))
            decode_s = float(np.mean(step_time_s(decode)))
        else:
            decode, decode_s = self.price_step(Step("decode", B, 1.0, P + 1.0)), 0.0
        pred = Prediction(
            scenario=sc,
            prefill=_phase("prefill", prefill, prefill_s),
            decode=_phase("decode", decode, decode_s),
            ttft_s=prefill_s,
            tpot_s=decode_s,
            e2e_s=prefill_s + decode_s * (w.output_len - 1),
            memory=self.memory(),
            notes=_unit_fallbacks(prefill + decode, sc),
        )
        if sc.parallel.pp > 1:
            from model.pipeline_parallel import apply_pipeline_parallel

            pred = apply_pipeline_parallel(pred, self)
        for opt in self.opts:
            pred = opt.result(pred, sc, self)
        return pred


def _unit_fallbacks(priced: list[PricedOp], sc: Scenario) -> list[str]:
    """Say when a compute dtype has no unit on this GPU and runs on another (GPUSpec.peak)."""
    gpu = sc.gpu
    missing = sorted({p.op.compute_dtype for p in priced} - set(gpu.peak_flops_per_s))
    return [
        f"{gpu.id} has no {dtype} tensor-core rate in its datasheet: {dtype} math is priced at "
        f"{gpu.peak(dtype) / 1e12:.0f} TFLOP/s, the unit kernels fall back to"
        for dtype in missing
    ]


def _phase(name: str, priced: list[PricedOp], time_s: float) -> PhaseResult:
    flops = sum(float(np.mean(p.op.flops)) * p.op.count for p in priced)
    moved = sum(float(np.mean(p.op.bytes)) * p.op.count for p in priced)
    return PhaseResult(name, priced, time_s, flops, moved)


def predict(scenario: Scenario, optimizations: list[Optimization] | None = None) -> Prediction:
    return Pipeline(scenario, optimizations).predict()


def with_updates(pred: Prediction, **changes: Any) -> Prediction:
    """A copy of a prediction with fields replaced (for `result` hooks)."""
    return replace(pred, **changes)
