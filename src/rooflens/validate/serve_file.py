"""Reading a serving benchmark's result file (`validate serve`) as untrusted user input.

Detects vLLM's JSON or SGLang's JSONL (formats in validate/serve.py) and checks every field
before anything is replayed: each problem is one line that names the file and the field and
says what form is expected, never quoting a string of the file (it may hold anything). The
checks bound every later loop: request counts, lengths and times are finite and in range, the
client concurrency is a whole number ≥ 1, the arrival process (rate, burstiness) is finite and
positive, so the replay (model/planner/sim.py) always ends.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from rooflens.hardware.errors import RooflensError
from rooflens.io.files import read_input_text

PER_REQUEST = ("input_lens", "output_lens", "ttfts", "itls")
# More requests than any serving benchmark sends; the replay takes about a second per 10,000.
MAX_REQUESTS = 100_000
# Longer than any context window (tokens) and any benchmark (s): beyond these, a typing slip.
MAX_TOKENS = 10**8
MAX_SECONDS = 1e7


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
    n_chunked: int = 0  # requests with fewer inter-token latencies than output tokens − 1


def read_result(path: str | Path) -> ServeResult:
    """Detect vLLM's JSON or SGLang's JSONL and read it; anything else is a one-line error."""
    p = Path(path)
    text = read_input_text(p, "benchmark result").strip()
    try:
        whole = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        whole = None
    if isinstance(whole, dict) and "dataset_name" not in whole:
        return _parse(whole, "vllm", p)
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        last = json.loads(lines[-1]) if lines else None
    except (json.JSONDecodeError, RecursionError):
        last = None
    if isinstance(last, dict) and "dataset_name" in last and "backend" in last:
        return _parse(last, "sglang", p)
    raise RooflensError(
        f"{p} is neither a `vllm bench serve --save-result` JSON nor a SGLang bench_serving "
        "JSONL line (no 'dataset_name' and 'backend' keys)"
    )


def _numbers(d: dict[str, Any], key: str, p: Path, n: int | None = None) -> np.ndarray:
    """A flat list of finite numbers (not booleans) of length n."""
    values = d.get(key)
    if not isinstance(values, list) or not all(_is_number(v) for v in values):
        raise RooflensError(f"{p}: field '{key}' must be a list of numbers")
    if n is not None and len(values) != n:
        raise RooflensError(
            f"{p}: field '{key}' has {len(values):,} entries for {n:,} requests; one per "
            "request is expected"
        )
    out = np.asarray(values, dtype=float)
    if not np.isfinite(out).all():
        raise RooflensError(f"{p}: field '{key}' holds NaN or infinite values")
    return out


def _is_number(v: object) -> TypeGuard[float]:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _bad(p: Path, key: str, mask: np.ndarray, rule: str) -> None:
    if mask.any():
        first = int(np.flatnonzero(mask)[0])
        raise RooflensError(
            f"{p}: field '{key}': {int(mask.sum()):,} request(s) (first: request {first}) "
            f"break the rule: {rule}"
        )


def _itls(d: dict[str, Any], p: Path, n: int) -> list[np.ndarray]:
    raw = d.get("itls")
    assert isinstance(raw, list)
    out = []
    for x in raw:
        if x is None:
            x = []
        if not isinstance(x, list) or not all(_is_number(v) for v in x):
            raise RooflensError(
                f"{p}: field 'itls' must be a list of lists of seconds (one list per request)"
            )
        out.append(np.asarray(x, dtype=float))
    if not all(np.isfinite(x).all() and (x >= 0).all() and (x <= MAX_SECONDS).all() for x in out):
        raise RooflensError(
            f"{p}: field 'itls' holds negative, NaN, infinite or huge values; inter-token "
            f"latencies are seconds in [0, {MAX_SECONDS:.0e}]"
        )
    return out


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
    if n > MAX_REQUESTS:
        raise RooflensError(f"{p}: {n:,} requests; validate serve replays at most "
                            f"{MAX_REQUESTS:,} (benchmark a sample of them)")  # fmt: skip
    ins, outs = _numbers(d, "input_lens", p), _numbers(d, "output_lens", p)
    ttfts = _numbers(d, "ttfts", p)
    itls = _itls(d, p, n)
    for key, values in (("input_lens", ins), ("output_lens", outs)):
        _bad(p, key, (values < 0) | (values != np.round(values)) | (values > MAX_TOKENS),
             f"a whole number of tokens in [0, {MAX_TOKENS:.0e}]")  # fmt: skip
    errors = d.get("errors")
    if errors is None:
        errors = [""] * n
    if not isinstance(errors, list) or len(errors) != n:
        raise RooflensError(f"{p}: field 'errors' must be a list of one message per request")
    if not all(e is None or isinstance(e, str) for e in errors):
        raise RooflensError(f"{p}: field 'errors' must hold text (empty for a success)")
    ok = (outs > 0) & (ins > 0) & np.array([not e for e in errors])
    if not ok.any():
        raise RooflensError(f"{p}: no successful request to replay")
    _bad(p, "ttfts", ok & ~((ttfts > 0) & (ttfts <= MAX_SECONDS)),
         f"a successful request's time to first token is in (0, {MAX_SECONDS:.0e}] s")  # fmt: skip
    gaps = np.array([x.size for x in itls])
    _bad(p, "itls", ok & (gaps > np.maximum(outs - 1, 0)),
         "a request of O output tokens has at most O − 1 inter-token latencies (see "
         "'output_lens')")  # fmt: skip
    duration = _duration(d, p, ttfts, itls, ok)
    starts = _start_times(d, p, n)
    rate = _rate(d, p)
    burstiness = _positive(d, "burstiness", p, default=1.0)
    conc = d.get("max_concurrency")
    if conc is not None and not (_is_number(conc) and 1 <= conc <= 1e9 and conc == int(conc)):
        raise RooflensError(f"{p}: field 'max_concurrency' must be null or a whole number ≥ 1")
    idx = np.flatnonzero(ok)
    return ServeResult(
        engine=engine,
        path=str(p),
        input_lens=ins[idx],
        output_lens=outs[idx],
        ttfts_s=ttfts[idx],
        itls_s=[itls[i] for i in idx],
        duration_s=duration,
        request_rate=rate,
        burstiness=burstiness,
        max_concurrency=None if conc is None else int(conc),
        start_times_s=None if starts is None else starts[idx] - starts.min(),
        n_failed=int(n - idx.size),
        n_chunked=int((ok & (gaps < outs - 1)).sum()),
    )


def _duration(
    d: dict[str, Any], p: Path, ttfts: np.ndarray, itls: list[np.ndarray], ok: np.ndarray
) -> float:
    """The run's wall time: a number of seconds no shorter than its longest request."""
    value = d.get("duration")
    if not _is_number(value) or not (0 < value <= MAX_SECONDS):
        raise RooflensError(
            f"{p}: field 'duration' must be the run's length in seconds, in (0, {MAX_SECONDS:.0e}]"
        )
    longest = max(float(ttfts[i] + itls[i].sum()) for i in np.flatnonzero(ok))
    if value < 0.99 * longest - 1e-3:  # the run lasts at least as long as each of its requests
        raise RooflensError(
            f"{p}: field 'duration' ({value:g} s) is shorter than the longest request "
            f"({longest:g} s, TTFT plus inter-token latencies); is the file edited?"
        )
    return float(value)


def _start_times(d: dict[str, Any], p: Path, n: int) -> np.ndarray | None:
    if d.get("start_times") is None:
        return None
    starts = _numbers(d, "start_times", p, n)
    with np.errstate(over="ignore"):  # ±1e308 apart: an infinite span, refused here
        span = np.ptp(starts)
    if span > MAX_SECONDS:
        raise RooflensError(f"{p}: field 'start_times' spans more than {MAX_SECONDS:.0e} s")
    return starts


def _rate(d: dict[str, Any], p: Path) -> float | None:
    """None: every request sent at once (vLLM and SGLang write the string "inf")."""
    rate = d.get("request_rate")
    if rate == "trace":
        raise RooflensError(
            f"{p}: request_rate 'trace' (SGLang trace timestamps) does not record "
            "the send times; replay the trace with `rooflens plan --trace`"
        )
    if rate is None or rate == "inf":
        return None
    if not _is_number(rate) or not (0 < rate <= 1e9):
        raise RooflensError(
            f"{p}: field 'request_rate' must be a number of requests/s > 0, or the text \"inf\""
        )
    return float(rate)


def _positive(d: dict[str, Any], key: str, p: Path, default: float) -> float:
    value = d.get(key)
    if value is None:
        return default
    if not _is_number(value) or not (0 < value <= 1e6) or not math.isfinite(value):
        raise RooflensError(f"{p}: field '{key}' must be a finite number > 0")
    return float(value)
