"""Steady state of a continuously batched replica (Orca, Yu et al. OSDI'22; vLLM), vectorised
over configurations: arrays of per-replica arrival rates and batch caps in, latency out.

Decode batch from Little's law: a request stays O steps, so B = λ·O·t(B); the throughput
curve X(M) = M / t(M) rises with M, so B is read off the inverse of X (one interpolation).
Three schedulers:
- `colocated`: a prompt is prefilled alone and stalls every running sequence (vLLM without
  chunked prefill). Prefill is an M/G/1 queue with utilisation ρ = λ·E[S]; decode gets the rest
  of the time, so TPOT = t(B)/(1 − ρ).
- `chunked`: each step carries the decode tokens plus up to C − B prompt tokens (Sarathi-Serve,
  Agrawal et al. OSDI'24), so a step holds M = λ(P+O)·t tokens: the same inversion on the
  mixed-step curve. Prompts queue for the prefill share of the token budget.
- `disaggregated`: prefill and decode replicas (DistServe, Zhong et al. OSDI'24; Splitwise,
  Patel et al. ISCA'24); the KV cache crosses the inter-node link before the first token.
Queueing: mean wait by Pollaczek–Khinchine, W = λE[S²]/(2(1−ρ)); its p99 from the exponential
tail P(W > x) = ρ·exp(−ρx/W) (exact for M/M/1, Kingman's heavy-traffic form otherwise).
Percentile TPOT is bounded by a full batch (the batch cap) plus the prefill work of the p99
number of arrivals during a request's decode; the simulation (sim.py) checks all of it.
Step-structure optimizations enter through the curves: t(B) is the time per output token (a
draft-and-verify iteration / τ), and a chunked step of B sequences holds B·w of the token
budget (w: the verification width) and lasts an iteration. With expert parallelism the rate
arrays are per attention group (sweep.py divides by replicas × ep/tp). With pipeline
parallelism a prompt holds the first stage for one GPipe slot H = stage_hold_s (the next prompt
enters behind it), so the prefill queues serve in H, while the prompt's own TTFT is all of S
(model/predict/pp_schedule.py).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from rooflens.model.planner.curves import Curves
from rooflens.model.planner.workload import Z99, ServingWorkload
from rooflens.model.predict.pp_schedule import stage_hold_s, stage_share_s

MODES = ("colocated", "chunked", "disaggregated")
CHUNK_TOKENS = 2048  # the chunked scheduler's token budget per step, unless a plan sets one


def poisson_p99(mean: np.ndarray) -> np.ndarray:
    """99th percentile of a Poisson count: m + z√m + (z² − 1)/6 (Cornish–Fisher, skew term)."""
    m = np.maximum(mean, 0.0)
    return m + Z99 * np.sqrt(m) + (Z99**2 - 1) / 6


def wait_p99(mean_wait_s: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """x with P(W > x) = 1 %, for P(W > x) = ρ·exp(−ρx/E[W]); 0 when ρ ≤ 1 %."""
    rho_safe = np.clip(rho, 1e-12, None)
    x = mean_wait_s / rho_safe * np.log(np.maximum(rho_safe / 0.01, 1.0))
    return np.where(rho > 0.01, x, 0.0)


def interp(x: np.ndarray, grid: np.ndarray, values: np.ndarray) -> np.ndarray:
    return np.interp(x, grid, values)


def solve_concurrency(grid: np.ndarray, step_s: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """M with M / step(M) = demand tokens/s. Below the grid, step ≈ step(grid[0])."""
    throughput = np.maximum.accumulate(grid / step_s)
    m = np.where(demand < throughput[0], demand * step_s[0], np.interp(demand, throughput, grid))
    for _ in range(50):  # M = demand·step(M): a contraction where the curve is stable
        new = np.minimum(demand * np.interp(m, grid, step_s), grid[-1])
        converged = bool(np.all(np.abs(new - m) <= 1e-9 * np.abs(m)))  # allclose(rtol=1e-9),
        # without its ~35 µs of checks per call (thousands of calls in a plan)
        m = new
        if converged:
            break
    return m


@dataclass
class Metrics:
    """Arrays over configurations (seconds, sequences, tokens)."""

    stable: np.ndarray
    mean_batch: np.ndarray
    ttft_mean_s: np.ndarray
    ttft_p99_s: np.ndarray
    tpot_mean_s: np.ndarray
    tpot_p99_s: np.ndarray
    load: np.ndarray  # the busiest of: batch p99 / cap, prefill utilisation

    def take(self, index: np.ndarray) -> Metrics:
        return Metrics(**{f.name: getattr(self, f.name)[index] for f in fields(self)})


@dataclass(frozen=True)
class LengthStats:
    prompt_mean: float
    output_mean: float

    @classmethod
    def of(cls, w: ServingWorkload) -> LengthStats:
        return cls(w.prompt.mean(), w.output.mean())


def _queue(
    rate: np.ndarray, busy_s: np.ndarray | float, busy_sq_s: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """M/G/1 by Pollaczek–Khinchine: (ρ, mean wait, p99 wait); busy = time a job holds it."""
    rho = rate * busy_s
    free = np.clip(1.0 - rho, 1e-12, None)
    wait = rate * busy_sq_s / (2.0 * free)
    return rho, wait, wait_p99(wait, rho)


def colocated(c: Curves, L: LengthStats, rate: np.ndarray, cap: np.ndarray) -> Metrics:
    """Prefill (alone, prioritised) stalls decode; decode runs the rest of the time."""
    S = float(np.mean(c.prefill_s))
    hold = stage_hold_s(c.prefill_s, c.prefill_hop_s, c.group.pp)  # a prompt holds stage 1
    H, H2 = float(np.mean(hold)), float(np.mean(hold**2))
    rho, wait, w99 = _queue(rate, H, H2)
    free = np.clip(1.0 - rho, 1e-12, None)
    step = c.decode_s
    demand = rate * L.output_mean / free
    batch = solve_concurrency(c.tokens, step, demand)
    t = interp(batch, c.tokens, step)
    batch_p99 = poisson_p99(batch)
    stable = (rho < 1.0) & (demand <= interp(cap, c.tokens, c.tokens / step)) & (batch_p99 <= cap)
    tpot = t / free
    stalls = poisson_p99(rate * L.output_mean * tpot)
    tpot_p99 = interp(cap, c.tokens, step) + stalls * H / max(L.output_mean - 1.0, 1.0)
    return Metrics(
        stable=stable,
        mean_batch=batch,
        ttft_mean_s=wait + (1.0 - rho) * t / 2 + S,
        ttft_p99_s=w99 + c.prefill_p99_s + t,
        tpot_mean_s=tpot,
        tpot_p99_s=tpot_p99,
        load=np.maximum(batch_p99 / cap, rho),
    )


def chunked(c: Curves, L: LengthStats, rate: np.ndarray, cap: np.ndarray, chunk: int) -> Metrics:
    """Steps of C tokens at most: the decode tokens first, prompt chunks in the rest.

    A prompt of P tokens rides in P/(C − B) steps and lengthens each by the extra body time
    of its chunk (the step is convex in its tokens, so chunks are priced whole, not spread
    thin): ΔS(B) per prompt. Over a long time T with n steps, T = n·t(B) + λT·ΔS, so the
    mean step is t(B)/(1 − λΔS), and Little gives B = λ·O·t(B)/(1 − λΔS(B)), solved by a
    monotone fixed-point iteration from the decode-only batch.
    """
    O = L.output_mean
    grid = c.tokens
    step = c.decode_s
    extra_grid = chunk_extra_s(c, grid, chunk).mean(axis=1)  # mean ΔS at each batch
    # Capacity G(B) = B(1 − λΔS(B))/t(B) − λO on the grid, per configuration; the batch is
    # its first zero crossing (the stable root), linear between grid points, then refined.
    lam = rate[:, None]
    G = grid[None, :] * (1.0 - lam * extra_grid[None, :]) / step[None, :] - lam * O
    above = G >= 0
    found = above.any(axis=1)
    j = np.argmax(above, axis=1)
    rows = np.arange(rate.size)
    j0 = np.maximum(j - 1, 0)
    g0, g1 = G[rows, j0], G[rows, j]
    frac = np.where(g1 > g0, -g0 / np.where(g1 > g0, g1 - g0, 1.0), 0.0)
    batch = np.where(j == 0, rate * O * step[0] / np.clip(1 - rate * extra_grid[0], 1e-9, None),
                     grid[j0] + (grid[j] - grid[j0]) * frac)  # fmt: skip
    for _ in range(3):
        free = np.clip(1.0 - rate * interp(batch, grid, extra_grid), 1e-9, None)
        batch = np.minimum(rate * O * interp(batch, grid, step) / free, grid[-1])
    converged = found
    extra = interp(batch, grid, extra_grid)
    free = np.clip(1.0 - rate * extra, 1e-12, None)
    t = interp(batch, grid, step)
    tpot = t / free
    batch_p99 = poisson_p99(batch)
    # Prompt queue: the C − B·w token budget of a step of length T_full serves prompts FCFS
    # (a step is τ tokens' time: one draft-and-verify iteration under speculative decoding).
    rows = batch * c.rows_per_sequence
    room = np.maximum(float(chunk) - rows, 1.0)
    iteration = c.tokens_per_step * t
    t_full = iteration + interp(rows + room, grid, c.body_s) - interp(rows, grid, c.body_s)
    pts = c.prompt_points[None, :] * c.prompt_row_fraction  # rows computed (prefix cache)
    busy = pts / room[:, None] * t_full[:, None]
    rho, wait, w99 = _queue(rate, busy.mean(axis=1), (busy**2).mean(axis=1))
    own = np.maximum(pts / room[:, None], 1.0) * iteration[:, None] + chunk_extra_s(c, batch, chunk)
    P99 = c.prompt_p99_tokens * c.prompt_row_fraction
    own_p99 = np.maximum(P99 / room, 1.0) * iteration + _extra(
        c, batch, P99, c.prefill_extra_p99_s, chunk
    )
    stable = converged & (rate * extra < 1.0) & (rho < 1.0) & (batch_p99 <= cap)
    stable &= batch < grid[-1]
    stable &= rate * O <= interp(cap, grid, grid / step)
    arrivals = poisson_p99(rate * O * tpot)
    at_cap = interp(cap, grid, extra_grid)
    return Metrics(
        stable=stable,
        mean_batch=batch,
        ttft_mean_s=wait + own.mean(axis=1) + t / 2,
        ttft_p99_s=w99 + own_p99 + t,
        tpot_mean_s=tpot,
        tpot_p99_s=interp(cap, grid, step) + arrivals * at_cap / max(O - 1.0, 1.0),
        load=np.maximum(batch_p99 / cap, np.maximum(rho, rate * extra)),
    )


def _extra(c: Curves, batch: np.ndarray, prompt: np.ndarray | float, extra_s: np.ndarray | float,
           chunk: int) -> np.ndarray:  # fmt: skip
    """Extra step time one prompt adds when cut into chunks of C − B·w tokens beside B decodes
    (w rows each: 1, or the verification width), plus its attention and side-model prefill."""
    rows = batch * c.rows_per_sequence
    room = np.maximum(float(chunk) - rows, 1.0)
    full = np.floor(prompt / room)
    rest = prompt - full * room
    base = interp(rows, c.tokens, c.body_s)
    return (
        full * (interp(rows + room, c.tokens, c.body_s) - base)
        + (interp(rows + rest, c.tokens, c.body_s) - base)
        + stage_share_s(extra_s, c.group.pp)
    )


def chunk_extra_s(c: Curves, batch: np.ndarray, chunk: int) -> np.ndarray:
    """ΔS of each prompt quantile point at each batch: shape [batch, points]."""
    rows = c.prompt_points[None, :] * c.prompt_row_fraction
    return _extra(c, batch[:, None], rows, c.prefill_extra_s[None, :], chunk)


def disaggregated(
    c: Curves, L: LengthStats, rate_prefill: np.ndarray, rate_decode: np.ndarray, cap: np.ndarray,
    prefill: Curves | None = None,
) -> Metrics:  # fmt: skip
    """Prefill replicas (M/G/1 each) hand the KV cache to decode replicas over the link.
    `prefill`: the prefill replicas' curves when they run another group (mixed GPUs, mixed.py);
    c is the decode side's."""
    cp = c if prefill is None else prefill
    S = float(np.mean(cp.prefill_s))
    hold = stage_hold_s(cp.prefill_s, cp.prefill_hop_s, cp.group.pp)
    rho, wait, w99 = _queue(rate_prefill, float(np.mean(hold)), float(np.mean(hold**2)))
    per_token, latency = kv_transfer(cp, c)
    xfer_mean = float(np.mean(cp.prompt_points)) * per_token + latency
    xfer_p99 = cp.prompt_p99_tokens * per_token + latency
    step = c.decode_s
    demand = rate_decode * L.output_mean
    batch = solve_concurrency(c.tokens, step, demand)
    batch_p99 = poisson_p99(batch)
    stable = (rho < 1.0) & (demand <= interp(cap, c.tokens, c.tokens / step)) & (batch_p99 <= cap)
    t = interp(batch, c.tokens, step)
    return Metrics(
        stable=stable,
        mean_batch=batch,
        ttft_mean_s=wait + S + xfer_mean,
        ttft_p99_s=w99 + cp.prefill_p99_s + xfer_p99,
        tpot_mean_s=t,
        tpot_p99_s=interp(cap, c.tokens, step),
        load=np.maximum(batch_p99 / cap, rho),
    )


def kv_transfer(prefill: Curves, decode: Curves) -> tuple[float, float]:
    """(s per prompt token, latency s) of moving the KV cache from the prefill replica to the
    decode replica: every GPU sends (receives) its shard over its own inter-node link at once,
    so the slower side sets the time (the whole token's KV is the same on both sides)."""
    return (max(prefill.kv_transfer_s_per_token, decode.kv_transfer_s_per_token),
            max(prefill.kv_transfer_latency_s, decode.kv_transfer_latency_s))  # fmt: skip
