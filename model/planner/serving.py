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
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from model.planner.curves import Curves
from model.planner.workload import Z99, ServingWorkload

MODES = ("colocated", "chunked", "disaggregated")


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
    inside = np.interp(demand, throughput, grid)
    return np.where(demand < throughput[0], demand * step_s[0], inside)


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
    pp = c.group.pp
    S, S2 = float(np.mean(c.prefill_s)), float(np.mean(c.prefill_s**2))
    rho, wait, w99 = _queue(rate, S / pp, S2 / pp**2)
    free = np.clip(1.0 - rho, 1e-12, None)
    step = c.decode_s
    demand = rate * L.output_mean / free
    batch = solve_concurrency(c.tokens, step, demand)
    t = interp(batch, c.tokens, step)
    batch_p99 = poisson_p99(batch)
    stable = (rho < 1.0) & (demand <= interp(cap, c.tokens, c.tokens / step)) & (batch_p99 <= cap)
    tpot = t / free
    stalls = poisson_p99(rate * L.output_mean * tpot)
    tpot_p99 = interp(cap, c.tokens, step) + stalls * (S / pp) / max(L.output_mean - 1.0, 1.0)
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
    """Steps of C tokens at most: the decode tokens first, prompt chunks in the rest."""
    pp, P, O = c.group.pp, L.prompt_mean, L.output_mean
    attn_per_prompt_token = float(np.mean(c.prefill_attn_s)) / P / pp
    r = O / (O + P)  # share of a step's tokens that decode
    grid = c.tokens

    def step_s(decode: np.ndarray, prompt_tokens: np.ndarray, attn: bool = True) -> np.ndarray:
        """A step of `decode` sequences and `prompt_tokens` prompt tokens (their attention at
        the token-weighted mean unless attn=False)."""
        return (
            interp(decode + prompt_tokens, grid, c.body_s)
            + interp(decode, grid, c.lm_s + c.attn_s)
            + (prompt_tokens * attn_per_prompt_token if attn else 0.0)
        )

    mixed = step_s(r * grid, (1 - r) * grid)  # the steady-state step holding M tokens
    demand = rate * (P + O)
    tokens = solve_concurrency(grid, mixed, demand)
    limit = np.minimum(float(chunk), cap / r)
    batch = r * tokens
    t = interp(tokens, grid, mixed)
    batch_p99 = poisson_p99(batch)
    # Prompt service: a share of C − B tokens per step, each step T_full long. A prompt holds
    # the prefill budget for P/(C − B) steps (fluid; short prompts share a step) and waits at
    # least one whole step for its first token.
    room = np.maximum(float(chunk) - batch, 1.0)
    t_full = step_s(batch, room)
    pts = c.prompt_points[None, :]
    busy = pts / room[:, None] * t_full[:, None]
    rho, wait, w99 = _queue(rate, busy.mean(axis=1), (busy**2).mean(axis=1))
    own_attn = c.prefill_attn_s[None, :] / pp  # a prompt's own attention, exact in its length
    latency = np.maximum(pts / room[:, None], 1.0) * step_s(
        batch[:, None], np.minimum(pts, room[:, None]), attn=False
    )
    S = (latency + own_attn).mean(axis=1)
    P99 = c.prompt_p99_tokens
    S99 = np.maximum(P99 / room, 1.0) * step_s(batch, np.minimum(P99, room), attn=False)
    S99 = S99 + c.prefill_attn_p99_s / pp
    stable = (demand <= interp(limit, grid, grid / mixed)) & (batch_p99 <= cap) & (rho < 1.0)
    per_prompt_token = (t_full - step_s(batch, np.zeros_like(batch))) / room
    arrivals = poisson_p99(rate * O * t)
    extra = arrivals * P * per_prompt_token / max(O - 1.0, 1.0)
    return Metrics(
        stable=stable,
        mean_batch=batch,
        ttft_mean_s=wait + S + t / 2,
        ttft_p99_s=w99 + S99 + t,
        tpot_mean_s=t,
        tpot_p99_s=interp(cap, grid, c.decode_s) + extra,
        load=np.maximum(batch_p99 / cap, rho),
    )


def disaggregated(
    c: Curves, L: LengthStats, rate_prefill: np.ndarray, rate_decode: np.ndarray, cap: np.ndarray
) -> Metrics:
    """Prefill replicas (M/G/1 each) hand the KV cache to decode replicas over the link."""
    pp = c.group.pp
    S, S2 = float(np.mean(c.prefill_s)), float(np.mean(c.prefill_s**2))
    rho, wait, w99 = _queue(rate_prefill, S / pp, S2 / pp**2)
    xfer_mean = L.prompt_mean * c.kv_transfer_s_per_token + c.kv_transfer_latency_s
    xfer_p99 = c.prompt_p99_tokens * c.kv_transfer_s_per_token + c.kv_transfer_latency_s
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
        ttft_p99_s=w99 + c.prefill_p99_s + xfer_p99,
        tpot_mean_s=t,
        tpot_p99_s=interp(cap, c.tokens, step),
        load=np.maximum(batch_p99 / cap, rho),
    )
