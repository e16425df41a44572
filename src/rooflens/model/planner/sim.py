"""A seeded discrete-event simulation of one continuously batched replica, to check the
analytical steady state (serving.py) where its approximations (Poisson batch, exponential
wait tail, fluid chunking) may be optimistic.

Poisson arrivals; lengths drawn from the workload's distributions; iteration-level scheduling
(Orca): every step emits one token per running sequence. Schedulers as in serving.py:
`colocated` runs a waiting prompt alone before the next decode step (prefill first, FCFS);
`chunked` fills each step's token budget with decode tokens, then prompt chunks FCFS;
under a step-structure optimization (speculative decoding…) decode runs in steps of 1/τ of
an iteration each (one token per sequence), and a mixed step is a whole iteration: τ tokens per
running sequence, w rows each in the token budget;
`disaggregated` runs prefill as an FCFS queue (Lindley's recursion) and decode as a replica
without prefill. Decode-only stretches between events (an arrival that can be admitted, a
completion) are priced in one vectorised call, so a run of thousands of requests takes well
under a second. Routing across replicas is random (each replica sees rate / replicas).

`replay` keeps the per-request outcome (`Trace`), for replaying a measured benchmark
(validate/serve.py): optional closed-loop clients (`concurrency`: at most N requests in flight,
the next sent when one finishes, as `vllm bench serve --max-concurrency` does; TTFT counts from
the send), and the inter-token gaps the running sequences saw (a decode step, or a prompt's
prefill stalling them), weighted by the tokens that ended each gap.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import asdict, dataclass

import numpy as np

from rooflens.model.planner.serving import CHUNK_TOKENS
from rooflens.model.planner.step_costs import StepCosts

WARMUP_SHARE = 0.1  # the first requests, left out of every summary: they meet an empty replica


@dataclass(frozen=True)
class SimResult:
    mode: str
    n_requests: int
    ttft_mean_s: float
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_mean_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    mean_batch: float
    wall_s: float
    slo_attainment: float = 1.0  # share of requests within the per-request SLOs given

    def to_dict(self) -> dict[str, float | int | str]:
        return asdict(self)


@dataclass(frozen=True)
class Trace:
    """Per-request outcome of a replay (seconds): when each request was sent (its arrival, or
    later under a client concurrency limit), got its first token, began decoding, finished;
    the inter-token gaps of the running sequences with the tokens ending each; ∫ batch dt."""

    sent_s: np.ndarray
    first_s: np.ndarray
    decode_start_s: np.ndarray
    finish_s: np.ndarray
    itl_gap_s: np.ndarray
    itl_tokens: np.ndarray
    batch_area: float
    span_s: float

    @property
    def ttft_s(self) -> np.ndarray:
        return self.first_s - self.sent_s

    def tpot_s(self, outputs: np.ndarray) -> np.ndarray:
        """Mean gap over tokens 2..N per request (NaN for single-token outputs)."""
        gaps = (self.finish_s - self.decode_start_s) / np.maximum(outputs - 1, 1)
        return np.where(outputs > 1, gaps, np.nan)


def replay(
    costs: StepCosts,
    mode: str,
    arrival_s: np.ndarray,
    prompts: np.ndarray,
    outputs: np.ndarray,
    cap: int,
    chunk_tokens: int = CHUNK_TOKENS,
    decode_arrival_s: np.ndarray | None = None,
    kv_transfer_s: np.ndarray | None = None,
    concurrency: int | None = None,
) -> Trace:
    """One replica over sorted arrivals (s) with these lengths (tokens). Disaggregated: the
    prefill replica takes `arrival_s`, the decode replica `decode_arrival_s`. `concurrency`
    (colocated and chunked): closed-loop clients, at most that many requests in flight."""
    if mode != "disaggregated":
        return _replica(costs, mode, arrival_s, prompts, outputs, costs.prefill_s(prompts),
                        costs.prefill_hold_s(prompts), cap, chunk_tokens, concurrency)  # fmt: skip
    lat, hold = costs.prefill_s(prompts), costs.prefill_hold_s(prompts)
    xfer = np.zeros_like(lat) if kv_transfer_s is None else kv_transfer_s
    ready = np.empty_like(lat)
    free_at = 0.0
    for i in range(arrival_s.size):  # Lindley: FCFS prefill, the first stage held `hold`
        begin = max(float(arrival_s[i]), free_at)
        free_at = begin + hold[i]
        ready[i] = begin + lat[i] + xfer[i]
    dec = arrival_s if decode_arrival_s is None else decode_arrival_s
    none = np.zeros_like(lat)
    d = _replica(costs, "colocated", dec, prompts, outputs, none, none, cap, chunk_tokens)
    return Trace(arrival_s, ready, d.first_s, d.finish_s, d.itl_gap_s, d.itl_tokens,
                 d.batch_area, d.span_s)  # fmt: skip


def simulate(
    costs: StepCosts,
    mode: str,
    arrival_s: np.ndarray,
    prompts: np.ndarray,
    outputs: np.ndarray,
    cap: int,
    chunk_tokens: int = CHUNK_TOKENS,
    decode_arrival_s: np.ndarray | None = None,
    kv_transfer_s: np.ndarray | None = None,
    warmup: float = WARMUP_SHARE,
    slo_s: tuple[float | None, float | None] = (None, None),
) -> SimResult:
    """`replay`, summarised after dropping the first `warmup` share of requests; `slo_s`:
    per-request (TTFT, TPOT) targets for the share of requests that meet both."""
    start = time.perf_counter()
    tr = replay(costs, mode, arrival_s, prompts, outputs, cap, chunk_tokens, decode_arrival_s,
                kv_transfer_s)  # fmt: skip
    keep = np.arange(arrival_s.size) >= int(warmup * arrival_s.size)
    ttft = tr.ttft_s[keep]
    tpot = tr.tpot_s(outputs)[keep & (outputs > 1)]
    tpot = tpot if tpot.size else np.zeros(1)
    good = ttft <= (slo_s[0] or np.inf)
    good &= ~(tr.tpot_s(outputs)[keep] > (slo_s[1] or np.inf))  # one-token outputs: no TPOT
    return SimResult(
        mode=mode,
        n_requests=int(keep.sum()),
        ttft_mean_s=float(ttft.mean()),
        ttft_p50_s=float(np.percentile(ttft, 50)),
        ttft_p99_s=float(np.percentile(ttft, 99)),
        tpot_mean_s=float(tpot.mean()),
        tpot_p50_s=float(np.percentile(tpot, 50)),
        tpot_p99_s=float(np.percentile(tpot, 99)),
        mean_batch=tr.batch_area / tr.span_s if tr.span_s > 0 else 0.0,
        wall_s=time.perf_counter() - start,
        slo_attainment=float(good.mean()),
    )


def _check_inputs(
    arrival_s: np.ndarray,
    prompts: np.ndarray,
    outputs: np.ndarray,
    prefill_lat_s: np.ndarray,
    prefill_hold_s: np.ndarray,
    cap: int,
    chunk_tokens: int,
    concurrency: int | None,
) -> None:
    """The bounds that make `_replica`'s loop end: finite times and lengths, at least
    one slot of batch, of chunk and of client concurrency."""
    if cap < 1 or chunk_tokens < 1 or (concurrency is not None and concurrency < 1):
        raise ValueError(
            f"a replica needs a batch cap, a chunk and a client concurrency ≥ 1, got {cap}, "
            f"{chunk_tokens} and {concurrency}"
        )
    for name, values in (("arrival times", arrival_s), ("prefill times", prefill_lat_s),
                         ("prefill holds", prefill_hold_s)):  # fmt: skip
        if not np.isfinite(values).all() or (values < 0).any():
            raise ValueError(f"{name} must be finite and ≥ 0 seconds")
    for name, values in (("prompt lengths", prompts), ("output lengths", outputs)):
        if not np.isfinite(values).all() or (values < 0).any():
            raise ValueError(f"{name} must be finite and ≥ 0 tokens")
    if arrival_s.size and (np.diff(arrival_s) < 0).any():
        raise ValueError("arrival times must be sorted")


def _replica(
    costs: StepCosts,
    mode: str,
    arrival_s: np.ndarray,
    prompts: np.ndarray,
    outputs: np.ndarray,
    prefill_lat_s: np.ndarray,
    prefill_hold_s: np.ndarray,
    cap: int,
    chunk_tokens: int,
    concurrency: int | None = None,
) -> Trace:
    """The Trace of one replica (a request's decode starts with its first token). A prompt's
    prefill takes `prefill_lat_s` to its first token and stalls the running sequences for
    `prefill_hold_s` (the first stage's slot: all of it without PP)."""
    _check_inputs(arrival_s, prompts, outputs, prefill_lat_s, prefill_hold_s, cap, chunk_tokens,
                  concurrency)  # fmt: skip
    n = arrival_s.size
    # Every pass of the loop admits a request, advances a prefill or retires a token of every
    # running sequence, so it ends within these many passes; more is a bug, not a hang.
    passes_left = 8 * n + 2 * int(np.sum(outputs) + np.sum(np.ceil(prompts))) + 16
    first, finish, sent = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    limit = n if concurrency is None else concurrency
    gaps: list[np.ndarray] = []  # inter-token gaps of running sequences, and their token counts
    counts: list[np.ndarray] = []
    stall, stalled = 0.0, 0  # prefill time waited since their last token, by how many
    pre_extra = costs.prefill_extra_s(prompts)  # one stage's share
    target = costs.target_tokens(prompts)  # what the target caches
    rows = np.maximum(target * costs.prompt_row_fraction, 1.0)  # and computes (prefix cache)
    tau, width = costs.tokens_per_step, costs.rows_per_sequence
    t, a, done, area = 0.0, 0, 0, 0.0
    waiting: deque[int] = deque()
    prefilling: list[list[float]] = []  # [request, prompt tokens done] (chunked)
    idx, left, kv = np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)

    def join(i: int, at: float) -> None:
        nonlocal idx, left, kv, done
        first[i] = at
        if outputs[i] <= 1:
            finish[i] = at
            done += 1
        else:
            idx = np.append(idx, i)
            left = np.append(left, outputs[i] - 1)
            kv = np.append(kv, target[i] + 1)

    def retire(at: float) -> None:
        nonlocal idx, left, kv, done
        out = left <= 0
        if out.any():
            finish[idx[out]] = at
            done += int(out.sum())
            idx, left, kv = idx[~out], left[~out], kv[~out]

    while done < n:
        passes_left -= 1
        if passes_left < 0:
            raise RuntimeError("the replica simulation made no progress (a step of zero time?)")
        while a < n and arrival_s[a] <= t and a - done < limit:
            sent[a] = max(float(arrival_s[a]), t) if concurrency else arrival_s[a]
            waiting.append(a)
            a += 1
        b = idx.size
        if mode == "colocated" and waiting and b < cap:
            i = waiting.popleft()
            join(i, t + prefill_lat_s[i])
            area += b * prefill_hold_s[i]  # the running sequences stall, still held
            if b:  # the sequences running before a run of prefills wait for all of them
                stalled = stalled if stall else b
                stall += prefill_hold_s[i]
            t += prefill_hold_s[i]
            continue
        busy_rows = b * width
        if mode == "chunked" and (prefilling or (waiting and b < cap)) and busy_rows < chunk_tokens:
            while waiting and b + len(prefilling) < cap:
                prefilling.append([waiting.popleft(), 0.0])
            tokens, extra = 0.0, 0.0
            for entry in prefilling:
                i = int(entry[0])
                take = min(rows[i] - entry[1], chunk_tokens - busy_rows - tokens)
                if take <= 0:
                    break
                entry[1] += take
                tokens += take
                extra += pre_extra[i] * take / rows[i]
            dt = costs.mixed_s(b, float(kv.sum()), tokens, extra)  # one iteration: τ tokens
            if b:
                gaps.append(np.array([dt]))
                counts.append(np.array([b * tau]))
            area, t = area + b * dt, t + dt
            left, kv = left - tau, kv + tau
            retire(t)
            for entry in [e for e in prefilling if e[1] >= rows[int(e[0])]]:
                prefilling.remove(entry)
                join(int(entry[0]), t)
            continue
        if b == 0:
            t = max(t, float(arrival_s[a]))
            continue
        steps = int(np.ceil(left.min()))  # τ-token iterations leave fractional counts
        ends = t + np.cumsum(costs.decode_s(b, float(kv.sum()) + b * np.arange(steps)))
        k = steps
        if b < cap and a < n and a - done < limit:  # stop after the step the next one arrives
            k = min(k, int(np.searchsorted(ends, arrival_s[a])) + 1)
        step_gaps = np.diff(ends[:k], prepend=t)
        weights = np.full(k, float(b))
        if stall:  # the stalled sequences' first gap holds the stall; joiners' does not
            gaps.append(np.array([step_gaps[0] + stall]))
            counts.append(np.array([float(stalled)]))
            weights[0] -= stalled
            stall = 0.0
        gaps.append(step_gaps)
        counts.append(weights)
        area += b * (ends[k - 1] - t)
        t = float(ends[k - 1])
        left, kv = left - k, kv + k
        retire(t)
    gap = np.concatenate(gaps) if gaps else np.zeros(0)
    return Trace(sent, first, first, finish, gap, np.concatenate(counts) if counts else gap,
                 area, t)  # fmt: skip
