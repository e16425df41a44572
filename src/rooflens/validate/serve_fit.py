"""The deployment a serving benchmark ran on, as the planner prices it (one replica's cost
curves), the fit of its serving-level terms, and benchmark-format files built from the
simulation (the CI example; never a measurement, and labelled so in the file).

Fit (`rooflens validate serve --fit`), by replaying the benchmark's own requests:
1. the host/scheduler overhead per engine step h, by bisection on the median TPOT (the
   simulated TPOT rises monotonically with h, every step paying it);
2. the batch cap the engine really ran with: the cap (up to --max-batch) whose replay
   matches the measured TTFT at p50 and p99 best (a binding cap queues prompts, so it shows
   in TTFT, not TPOT); where no cap binds, the largest of the equally good ones;
3. h again at that cap. The measured mean concurrency comes from Little's law.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from rooflens.hardware.errors import RooflensError, validated
from rooflens.model.optimizations import parse_opt
from rooflens.model.planner.curves import Curves, Group, build_curves
from rooflens.model.planner.gpu_prices import default_prices
from rooflens.model.planner.serving_profile import ServingProfile, with_step_overhead
from rooflens.model.planner.sim import replay
from rooflens.model.planner.space import DEFAULT_MAX_BATCHES, act_dtype
from rooflens.model.planner.step_costs import CurveCosts
from rooflens.model.planner.workload import LengthDist, ServingWorkload
from rooflens.model.predict.scenario import DEFAULT_OVERHEAD_BYTES
from rooflens.model.specs.presets import get_model
from rooflens.validate.serve import ServeResult, measured, predicted

BISECTIONS = 18  # h to 2^-18 of its bracket


@dataclass(frozen=True)
class Deployment:
    """What the benchmark ran on (the scenario flags of `validate serve`)."""

    model: str
    gpu: str
    tp: int = 1
    pp: int = 1
    ep: int = 1
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    opts: tuple[str, ...] = ()
    profile: str = "calibrated"
    mode: str = "chunked"
    chunk_tokens: int = 2048
    max_batch: int = 256
    prefix_hit_rate: float = 0.0  # share of prompt tokens the engine's prefix cache serves


def deployment_curves(d: Deployment, inputs: np.ndarray, outputs: np.ndarray) -> Curves:
    """One replica's curves for these request lengths (empirical distributions)."""
    if d.mode not in ("colocated", "chunked"):
        raise RooflensError(
            f"--mode {d.mode}: validate serve replays one replica; use colocated or chunked"
        )
    spec = get_model(d.model)
    longest = float(np.max(inputs + outputs))
    if longest > spec.max_context:
        raise RooflensError(
            f"a request of {longest:.0f} tokens exceeds {spec.id}'s max context "
            f"{spec.max_context}; is --model the model that was benchmarked?"
        )
    w = ServingWorkload(
        rate_per_s=1.0,  # the curves do not depend on the load
        prompt=LengthDist(kind="empirical", samples=tuple(int(x) for x in inputs)),
        output=LengthDist(kind="empirical", samples=tuple(int(x) for x in outputs)),
        # validate serve reports no cost; a GPU without a listed price still gets curves
        prices_usd_per_gpu_hour={} if d.gpu in default_prices() else {d.gpu: 1.0},
        prefix_hit_rate=d.prefix_hit_rate,  # one shared prefix (kv_tiers.py), held in HBM
        prefix_pool_tokens=d.prefix_hit_rate * float(np.mean(inputs)),
    )
    group = Group(
        d.gpu,
        d.tp,
        d.pp,
        d.ep,
        d.weight_dtype,
        act_dtype(d.gpu, d.weight_dtype),
        d.kv_dtype,
        d.opts,
    )
    c = build_curves(
        spec,
        group,
        w,
        [parse_opt(o) for o in d.opts],
        profile=d.profile,
        chunk_tokens=d.chunk_tokens,
        overhead_bytes=DEFAULT_OVERHEAD_BYTES,
    )
    if c.max_batch_memory < 1:
        raise RooflensError(
            f"{spec.id} does not fit on {d.gpu} at TP {d.tp} with these lengths; "
            "check --tp, --weight-dtype and --kv-dtype"
        )
    return c


def engine_cap(c: Curves, max_batch: int) -> int:
    """The batch the engine can run: its max_num_seqs, or fewer if the KV cache is smaller."""
    return int(max(1, min(max_batch, c.max_batch_memory)))


@dataclass(frozen=True)
class Fit:
    step_overhead_s: float
    max_batch: int
    predicted: dict[str, Any]
    replays: int


def fit(c: Curves, r: ServeResult, d: Deployment, seed: int = 0) -> Fit:
    meas = measured(r, None, None)
    runs = 0

    def run(h: float, cap: int) -> dict[str, Any]:
        nonlocal runs
        runs += 1
        costs = CurveCosts(with_step_overhead(c, h))
        return predicted(costs, r, d.mode, cap, d.chunk_tokens, None, None, seed)

    def fit_h(cap: int) -> float:
        target = meas["tpot_p50_s"]
        if not math.isfinite(target) or run(0.0, cap)["tpot_p50_s"] >= target:
            return 0.0  # the model is already as slow as the engine: nothing to add
        lo, hi = 0.0, target
        for _ in range(BISECTIONS):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if run(mid, cap)["tpot_p50_s"] < target else (lo, mid)
        return (lo + hi) / 2

    def ttft_error(p: dict[str, Any]) -> float:
        return sum(
            abs(math.log(max(p[k], 1e-12) / max(meas[k], 1e-12)))
            for k in ("ttft_p50_s", "ttft_p99_s")
        )

    top = engine_cap(c, d.max_batch)  # the engine never runs more than its max_num_seqs
    h = fit_h(top)
    caps = sorted({b for b in DEFAULT_MAX_BATCHES if b <= top} | {top})
    errors = [ttft_error(run(h, cap)) for cap in caps]
    best = min(errors)
    cap = max(cp for cp, e in zip(caps, errors, strict=True) if e <= best + 0.01)
    h = fit_h(cap)
    return Fit(h, cap, run(h, cap), runs)


def profile_from_fit(
    f: Fit, r: ServeResult, d: Deployment, before: dict[str, Any], provenance: dict[str, Any]
) -> ServingProfile:
    meas = measured(r, None, None)

    def err(p: dict[str, Any], k: str) -> float:
        return float(p[k] / meas[k] - 1.0) if meas[k] else math.nan

    keys = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s")
    errors = {
        **{f"{k}_error_before": err(before, k) for k in keys},
        **{f"{k}_error_after": err(f.predicted, k) for k in keys},
    }
    data = {
        "engine": r.engine,
        "model": d.model,
        "gpu": d.gpu,
        "tp": d.tp,
        "mode": d.mode,
        "step_overhead_s": f.step_overhead_s,
        "max_batch": f.max_batch,
        "measured_mean_concurrency": meas["mean_concurrency"],
        "fit": {k: v for k, v in errors.items() if math.isfinite(v)},  # no TPOT: no error
        "provenance": provenance,
    }
    return validated(ServingProfile, data, f"serving profile fitted to {r.path}")


def simulated_result(
    c: Curves,
    inputs: np.ndarray,
    outputs: np.ndarray,
    *,
    mode: str,
    cap: int,
    chunk_tokens: int,
    request_rate: float | None,
    max_concurrency: int | None,
    engine: str = "vllm",
    seed: int = 0,
) -> dict[str, Any]:
    """A benchmark result in the tool's own format, produced by replaying these requests
    through the simulation (seeded Poisson sends, or all at once). Not a measurement: every
    request's ITLs are its simulated TPOT repeated, and the file says so."""
    n = inputs.size
    rng = np.random.default_rng(seed)
    sent = np.zeros(n) if request_rate is None else np.cumsum(rng.exponential(1 / request_rate, n))
    tr = replay(
        CurveCosts(c), mode, sent, inputs, outputs, cap, chunk_tokens, concurrency=max_concurrency
    )
    tpot = np.nan_to_num(tr.tpot_s(outputs))
    doc: dict[str, Any] = {
        "_generated_by": "rooflens simulation (validate/serve_fit.py simulated_result): NOT a "
        "measurement; an example of the file format for tests",
        "request_rate": "inf" if request_rate is None else request_rate,
        "burstiness": 1.0,
        "max_concurrency": max_concurrency,
        "duration": round(float(np.nanmax(tr.finish_s)), 6),
        "completed": n,
        "input_lens": [int(x) for x in inputs],
        "output_lens": [int(x) for x in outputs],
        "ttfts": [round(float(x), 6) for x in tr.ttft_s],
        "itls": [[round(float(t), 6)] * int(o - 1) for t, o in zip(tpot, outputs, strict=True)],
        "errors": [""] * n,
    }
    if engine == "sglang":
        doc.update(backend="sglang", dataset_name="random")
    else:
        doc.update(
            backend="vllm",
            model_id="simulated",
            num_prompts=n,
            start_times=[round(float(x), 6) for x in tr.sent_s],
        )
    return doc
