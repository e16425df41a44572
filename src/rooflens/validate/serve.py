"""`rooflens validate serve`: a user's serving benchmark against the planner's simulation.

Reads the result file the user already has, detects which tool wrote it, replays the same
requests (their lengths, their arrival pattern or client concurrency) through the planner's
discrete-event simulation (model/planner/sim.py) and sets measured beside predicted: TTFT,
TPOT and ITL at p50 and p99, request and token throughput, goodput. The fit of the
serving-level terms lives in validate/serve_fit.py, the command in validate/serve_cli.py.

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

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rooflens.hardware.errors import RooflensError
from rooflens.model.planner.sim import Trace, replay
from rooflens.model.planner.step_costs import StepCosts

PER_REQUEST = ("input_lens", "output_lens", "ttfts", "itls")


@dataclass(frozen=True)
class ServeResult:
    """The successful requests of one benchmark run, in send order (seconds, tokens)."""

    engine: str  # vllm | sglang
    path: str
    input_lens: np.ndarray
    output_lens: np.ndarray
    ttfts_s: np.ndarray
    itls_s: list[np.ndarray]
    duration_s: float
    request_rate: float | None  # None: all sent at once ("inf")
    burstiness: float
    max_concurrency: int | None
    start_times_s: np.ndarray | None
    n_failed: int


def read_result(path: str | Path) -> ServeResult:
    """Detect vLLM's JSON or SGLang's JSONL and read it; anything else is a one-line error."""
    p = Path(path)
    if not p.is_file():
        raise RooflensError(f"benchmark result not found: {p}")
    text = p.read_text(errors="replace").strip()
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and "dataset_name" not in whole:
        return _parse(whole, "vllm", p)
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        last = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        last = None
    if isinstance(last, dict) and "dataset_name" in last and "backend" in last:
        return _parse(last, "sglang", p)
    raise RooflensError(
        f"{p} is neither a `vllm bench serve --save-result` JSON nor a SGLang bench_serving "
        "JSONL line (no 'dataset_name' and 'backend' keys)"
    )


def _parse(d: dict[str, Any], engine: str, p: Path) -> ServeResult:
    flag = "--save-detailed" if engine == "vllm" else "--output-details"
    missing = [k for k in PER_REQUEST if not isinstance(d.get(k), list)]
    if missing:
        raise RooflensError(
            f"{p}: no per-request '{missing[0]}'; re-run the benchmark with {flag} so that the "
            "requests can be replayed"
        )
    n = len(d["input_lens"])
    if n == 0 or any(len(d[k]) != n for k in PER_REQUEST):
        raise RooflensError(f"{p}: {', '.join(PER_REQUEST)} must be non-empty lists of one length")
    errors = d.get("errors") or [""] * n
    try:
        ins = np.asarray(d["input_lens"], dtype=float)
        outs = np.asarray(d["output_lens"], dtype=float)
        ttfts = np.asarray(d["ttfts"], dtype=float)
        itls = [np.asarray(x or [], dtype=float) for x in d["itls"]]
        duration = float(d["duration"])
        starts = np.asarray(d["start_times"], dtype=float) if d.get("start_times") else None
    except (KeyError, TypeError, ValueError) as exc:
        raise RooflensError(f"{p}: unreadable field ({type(exc).__name__}: {exc})") from None
    ok = (outs > 0) & (ins > 0) & np.array([not e for e in errors])
    if not ok.any():
        raise RooflensError(f"{p}: no successful request to replay")
    if not duration > 0:
        raise RooflensError(f"{p}: 'duration' must be > 0 s, got {duration}")
    rate = d.get("request_rate")
    if rate == "trace":
        raise RooflensError(
            f"{p}: request_rate 'trace' (SGLang trace timestamps) does not record "
            "the send times; replay the trace with `rooflens plan --trace`"
        )
    try:
        rate_value = None if rate in (None, "inf") else float(rate)
    except (TypeError, ValueError):
        raise RooflensError(f"{p}: request_rate '{rate}' is not a number or 'inf'") from None
    if rate_value is not None and not math.isfinite(rate_value):
        rate_value = None
    conc = d.get("max_concurrency")
    idx = np.flatnonzero(ok)
    return ServeResult(
        engine=engine,
        path=str(p),
        input_lens=ins[idx],
        output_lens=outs[idx],
        ttfts_s=ttfts[idx],
        itls_s=[itls[i] for i in idx],
        duration_s=duration,
        request_rate=rate_value,
        burstiness=float(d.get("burstiness") or 1.0),
        max_concurrency=int(conc) if conc else None,
        start_times_s=None if starts is None or starts.size != n else starts[idx] - starts.min(),
        n_failed=int(n - idx.size),
    )


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
