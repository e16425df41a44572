"""`rooflens validate serve`: a user's serving benchmark against the planner's simulation.

Reads the result file the user already has, detects which tool wrote it, replays the same
requests (their lengths, their arrival pattern or client concurrency) through the planner's
discrete-event simulation (model/planner/sim.py) and sets measured beside predicted: TTFT,
TPOT and ITL at p50 and p99, request and token throughput, goodput. The fit of the
serving-level terms lives in validate/serve_fit.py, the command in validate/serve_cli.py, the
reading and checking of the file in validate/serve_file.py.

Formats (field names as the tools write them):
- `vllm bench serve --save-result --save-detailed`: one JSON object; `vllm/benchmarks/serve.py`
  (formerly `benchmarks/benchmark_serving.py`) sets `request_rate` (a number or "inf"),
  `burstiness`, `max_concurrency` in `main`, and `benchmark()` returns `duration`,
  `completed`, `input_lens`, `output_lens`, `ttfts` (s), `itls` (per request, a list of s),
  `errors` and, in recent versions, `start_times`. Without `--save-detailed` the per-request
  lists are dropped, and the file cannot be replayed.
- SGLang `python -m sglang.bench_serving --output-details`: JSON Lines, one object appended per
  run (`python/sglang/bench_serving.py`: `backend`, `dataset_name`, `request_rate`,
  `max_concurrency`, `duration`, `completed`, and with `--output-details` `input_lens`,
  `output_lens`, `ttfts`, `itls`, `errors`). The last line is read.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rooflens.model.planner.sim import Trace, replay
from rooflens.model.planner.step_costs import StepCosts
from rooflens.validate.serve_file import PER_REQUEST, ServeResult, read_result

__all__ = ["PER_REQUEST", "ServeResult", "arrivals", "measured", "predicted", "read_result"]


def arrivals(r: ServeResult, seed: int = 0) -> tuple[np.ndarray, int | None, str]:
    """(send times, client concurrency limit, how they were obtained). Recorded start times
    are replayed as given; else the tool's own process: gamma inter-arrival times of shape
    `burstiness` and mean 1/rate (Poisson at burstiness 1, vllm/benchmarks/serve.py
    `get_request`), or everything at t = 0 for rate 'inf'; `max_concurrency` closes the loop."""
    n = r.input_lens.size
    if r.start_times_s is not None:
        order = np.argsort(r.start_times_s, kind="stable")
        return r.start_times_s[order], None, "recorded start times"
    if r.request_rate is None:
        sent = np.zeros(n)
        how = "all requests at t = 0"
    else:
        rng = np.random.default_rng(seed)
        theta = 1.0 / (r.request_rate * r.burstiness)
        sent = np.cumsum(rng.gamma(r.burstiness, theta, n))
        how = f"{r.request_rate:g} requests/s, burstiness {r.burstiness:g} (seeded)"
    if r.max_concurrency:
        how += f", at most {r.max_concurrency} in flight"
    return sent, r.max_concurrency, how


def tpot_of(ttft_s: np.ndarray, e2e_s: np.ndarray, outputs: np.ndarray) -> np.ndarray:
    """Per request (e2e − TTFT)/(O − 1), as vLLM's TPOT; NaN for one-token outputs."""
    return np.where(outputs > 1, (e2e_s - ttft_s) / np.maximum(outputs - 1, 1), np.nan)


def summarize(
    ttft_s: np.ndarray,
    tpot_s: np.ndarray,
    itl_s: np.ndarray,
    itl_weight: np.ndarray,
    inputs: np.ndarray,
    outputs: np.ndarray,
    duration_s: float,
    ttft_slo_s: float | None,
    tpot_slo_s: float | None,
) -> dict[str, float]:
    """TTFT/TPOT/ITL at p50 and p99 (s), throughputs (per s), goodput: requests per second
    meeting every per-request SLO (vLLM's `--goodput ttft:…,tpot:…`; DistServe, OSDI'24)."""
    tp = tpot_s[np.isfinite(tpot_s)]
    good = np.ones(ttft_s.size, dtype=bool)
    if ttft_slo_s is not None:
        good &= ttft_s <= ttft_slo_s
    if tpot_slo_s is not None:
        good &= ~(tpot_s > tpot_slo_s)  # one-token outputs have no TPOT to miss
    out = {
        "ttft_p50_s": float(np.percentile(ttft_s, 50)),
        "ttft_p99_s": float(np.percentile(ttft_s, 99)),
        "tpot_p50_s": float(np.percentile(tp, 50)) if tp.size else math.nan,
        "tpot_p99_s": float(np.percentile(tp, 99)) if tp.size else math.nan,
        "itl_p50_s": _weighted_percentile(itl_s, itl_weight, 50),
        "itl_p99_s": _weighted_percentile(itl_s, itl_weight, 99),
        "request_throughput_per_s": ttft_s.size / duration_s,
        "output_tokens_per_s": float(outputs.sum()) / duration_s,
        "total_tokens_per_s": float(inputs.sum() + outputs.sum()) / duration_s,
        "goodput_requests_per_s": float(good.sum()) / duration_s,
        "duration_s": duration_s,
    }
    return out


def _weighted_percentile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    if values.size == 0:
        return math.nan
    order = np.argsort(values)
    cum = np.cumsum(weights[order])
    return float(values[order][min(np.searchsorted(cum, q / 100 * cum[-1]), values.size - 1)])


def measured(r: ServeResult, ttft_slo_s: float | None, tpot_slo_s: float | None) -> dict[str, Any]:
    e2e = r.ttfts_s + np.array([x.sum() for x in r.itls_s])
    itl = np.concatenate(r.itls_s) if r.itls_s else np.zeros(0)
    out: dict[str, Any] = summarize(
        r.ttfts_s,
        tpot_of(r.ttfts_s, e2e, r.output_lens),
        itl,
        np.ones(itl.size),
        r.input_lens,
        r.output_lens,
        r.duration_s,
        ttft_slo_s,
        tpot_slo_s,
    )
    out["mean_concurrency"] = float(e2e.sum()) / r.duration_s  # Little's law
    return out


def predicted(
    costs: StepCosts,
    r: ServeResult,
    mode: str,
    cap: int,
    chunk_tokens: int,
    ttft_slo_s: float | None,
    tpot_slo_s: float | None,
    seed: int = 0,
) -> dict[str, Any]:
    """Replay the requests through one simulated replica and summarise as `measured`."""
    sent, conc, _ = arrivals(r, seed)
    order = np.argsort(sent, kind="stable")
    ins, outs = r.input_lens[order], r.output_lens[order]
    tr: Trace = replay(costs, mode, sent[order], ins, outs, cap, chunk_tokens, concurrency=conc)
    duration = float(np.nanmax(tr.finish_s) - np.nanmin(tr.sent_s))
    out: dict[str, Any] = summarize(
        tr.ttft_s,
        tr.tpot_s(outs),
        tr.itl_gap_s,
        tr.itl_tokens,
        ins,
        outs,
        max(duration, 1e-9),
        ttft_slo_s,
        tpot_slo_s,
    )
    out["mean_concurrency"] = float(np.sum(tr.finish_s - tr.sent_s)) / max(duration, 1e-9)
    out["mean_batch"] = tr.batch_area / tr.span_s if tr.span_s > 0 else 0.0
    return out
