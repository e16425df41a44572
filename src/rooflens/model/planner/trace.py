"""Request traces (`rooflens plan --trace FILE`): the user's own traffic, replayed as given in
place of Poisson arrivals.

The file is JSON Lines, one request per line: `timestamp` (seconds, any origin), `input_len`
and `output_len` (tokens), and optionally `prefix_id` (requests with the same id share their
first `prefix_len` prompt tokens: a system prompt, a conversation so far, a few-shot header).
The analytical model reads the trace's mean rate and its empirical length distributions; the
simulation check replays its arrival times and lengths, routed at random over the replicas.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from rooflens.hardware.errors import RooflensError

FIELDS = ("timestamp", "input_len", "output_len")
# A trace this long gives the rate and the length distributions to a fraction of a percent;
# beyond it reading costs seconds per million lines and the memory of every request.
MAX_TRACE_REQUESTS = 2_000_000
MAX_TOKENS = 10**8  # longer than any context window: a typing slip
MAX_RATE_PER_S = 1e6  # no deployment serves a million requests a second
MAX_SPAN_S = 1e9  # 30 years


class RequestTrace(BaseModel):
    """A trace sorted by time (stable): times from 0 (s), lengths (tokens)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    timestamp_s: tuple[float, ...]
    input_len: tuple[int, ...]
    output_len: tuple[int, ...]
    prefix_id: tuple[str, ...]  # "" = no shared prefix
    prefix_len: tuple[int, ...]

    @property
    def n(self) -> int:
        return len(self.timestamp_s)

    @property
    def span_s(self) -> float:
        return self.timestamp_s[-1] - self.timestamp_s[0]

    @property
    def rate_per_s(self) -> float:
        """Mean arrival rate: n − 1 gaps over the span."""
        return (self.n - 1) / self.span_s

    def prefix_hit_rate(self) -> float:
        """Share of prompt tokens a prefix cache serves: every request after the first of its
        prefix id finds that prefix cached (an unbounded LRU cache; vLLM automatic prefix
        caching, SGLang RadixAttention), so it prefills only its own tokens."""
        seen: set[str] = set()
        hit = 0
        for pid, plen in zip(self.prefix_id, self.prefix_len, strict=True):
            if pid and pid in seen:
                hit += plen
            seen.add(pid)
        return hit / max(sum(self.input_len), 1)

    def prefix_pool_tokens(self) -> float:
        """Tokens of the distinct prefixes (each counted once, as a cache holds it)."""
        pool: dict[str, int] = {}
        for pid, plen in zip(self.prefix_id, self.prefix_len, strict=True):
            if pid:
                pool.setdefault(pid, plen)
        return float(sum(pool.values()))

    def routed(self, share: float, rng: np.random.Generator, limit: int) -> np.ndarray:
        """Indices of the requests one of 1/share replicas sees under random routing (at most
        `limit`, at least one)."""
        picked = np.flatnonzero(rng.random(self.n) < share)
        return picked[:limit] if picked.size else np.array([0])


def read_trace(path: str | Path) -> RequestTrace:
    """Parse and check a JSONL trace, line by line (a file of any size is streamed, never read
    whole); every problem is one line naming the line number and the field, never a string of
    the file. At most MAX_TRACE_REQUESTS requests."""
    p = Path(path)
    if p.is_dir():
        raise RooflensError(f"trace '{p}' is a folder; give a JSONL file")
    if not p.exists():
        raise RooflensError(f"trace not found: {p}")
    rows = []
    try:
        with open(p, encoding="utf-8-sig", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    rows.append(_row(line, number, p))
                    if len(rows) > MAX_TRACE_REQUESTS:
                        raise RooflensError(
                            f"{p}: more than {MAX_TRACE_REQUESTS:,} requests, the most "
                            "`plan --trace` reads; give a sample of the trace (its rate and "
                            "lengths are what the plan uses)"
                        )
    except OSError as exc:
        raise RooflensError(f"cannot read trace '{p}': {exc.strerror or exc}") from None
    if len(rows) < 2:
        raise RooflensError(f"{p}: a trace needs at least two requests (one JSON object a line)")
    rows.sort(key=lambda r: r[0])
    t0 = rows[0][0]
    span = rows[-1][0] - t0
    if span <= 0:
        raise RooflensError(f"{p}: every timestamp is the same; the arrival rate is undefined")
    if (len(rows) - 1) / span > MAX_RATE_PER_S or span > MAX_SPAN_S:
        raise RooflensError(
            f"{p}: {len(rows):,} requests over {span:.3g} s is not a serving load (rates up to "
            f"{MAX_RATE_PER_S:.0e} requests/s, spans up to {MAX_SPAN_S:.0e} s); are the "
            "timestamps in seconds?"
        )
    return RequestTrace(
        path=str(p),
        timestamp_s=tuple(r[0] - t0 for r in rows),
        input_len=tuple(r[1] for r in rows),
        output_len=tuple(r[2] for r in rows),
        prefix_id=tuple(r[3] for r in rows),
        prefix_len=tuple(r[4] for r in rows),
    )


def _row(line: str, number: int, p: Path) -> tuple[float, int, int, str, int]:
    where = f"{p} line {number}"
    try:
        d = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        raise RooflensError(f"{where}: not a JSON object") from None
    if not isinstance(d, dict):
        raise RooflensError(f"{where}: not a JSON object")
    missing = [k for k in FIELDS if k not in d]
    if missing:
        raise RooflensError(f"{where}: missing '{missing[0]}' (need {', '.join(FIELDS)})")
    t = d["timestamp"]
    if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
        raise RooflensError(f"{where}: timestamp must be a finite number of seconds")
    ins = _count(d["input_len"], where, "input_len")
    outs = _count(d["output_len"], where, "output_len")
    plen = _count(d.get("prefix_len", 0), where, "prefix_len", allow_zero=True)
    pid = d.get("prefix_id")
    if pid is not None and not isinstance(pid, str | int):
        raise RooflensError(f"{where}: prefix_id must be text or a whole number")
    pid = "" if pid is None else str(pid)
    if plen and not pid:
        raise RooflensError(f"{where}: prefix_len without a prefix_id")
    if pid and not plen:
        raise RooflensError(f"{where}: a prefix_id needs a prefix_len ≥ 1")
    if plen > ins:
        raise RooflensError(f"{where}: prefix_len {plen} exceeds input_len {ins}")
    return float(t), ins, outs, pid, plen


def _count(value: object, where: str, key: str, allow_zero: bool = False) -> int:
    lo = 0 if allow_zero else 1
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value != int(value)
        or not lo <= value <= MAX_TOKENS
    ):
        raise RooflensError(
            f"{where}: {key} must be a whole number of tokens in [{lo}, {MAX_TOKENS:.0e}]"
        )
    return int(value)
