"""Request traces (`rooflens plan --trace FILE`): the user's own traffic, replayed as given in
place of Poisson arrivals.

The file is JSON Lines, one request per line: `timestamp` (seconds, any origin), `input_len`
and `output_len` (tokens), and optionally `prefix_id` (requests with the same id share their
first `prefix_len` prompt tokens: a system prompt, a conversation so far, a few-shot header).
The analytical model reads the trace's mean rate and its empirical length distributions; the
simulation check replays its arrival times and lengths, routed at random over the replicas.

A trace is user input: it is streamed in batches (never read whole), holds at most
MAX_TRACE_REQUESTS requests, and every field is checked (finite times, whole token counts in
range, a plausible rate); an error names the line and the field, never a string of the file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn

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


TraceSource = str | Path | RequestTrace  # a trace's path, or the trace already read


def read_trace(
    path: str | Path, progress: Callable[[int, int | None], None] | None = None
) -> RequestTrace:
    """Parse and check a JSONL trace, line by line (a file of any size is streamed, never read
    whole); every problem is one line naming the line number and the field, never a string of
    the file. At most MAX_TRACE_REQUESTS requests. `progress(lines read, lines in all or None
    for a pipe)` is called after each batch."""
    p = Path(path)
    if p.is_dir():
        raise RooflensError(f"trace '{p}' is a folder; give a JSONL file")
    if not p.exists():
        raise RooflensError(f"trace not found: {p}")
    total = _lines(p) if p.is_file() else None  # a second per GB, before any parsing
    if total is not None and total > MAX_TRACE_REQUESTS:
        raise RooflensError(_too_long(p))
    parts: list[Columns] = []
    count = 0
    try:
        with open(p, encoding="utf-8-sig", errors="replace") as handle:
            for batch in _batches(handle):
                values = _parse_batch(batch)
                cols = _fast_columns(values)
                if cols is None:  # some row is off: check row by row for the one-line error
                    rows = [_row(d, n, p) for (n, _), d in zip(batch, values, strict=True)]
                    cols = _as_columns(rows)
                parts.append(cols)
                count += len(values)
                if progress is not None:
                    progress(batch[-1][0], total)
                if count > MAX_TRACE_REQUESTS:  # a pipe: counted while read
                    raise RooflensError(_too_long(p))
    except OSError as exc:
        raise RooflensError(f"cannot read trace '{p}': {exc.strerror or exc}") from None
    if count < 2:
        raise RooflensError(f"{p}: a trace needs at least two requests (one JSON object a line)")
    t, ins, outs, plen = (np.concatenate([c[i] for c in parts]) for i in (0, 1, 2, 4))
    pid = [x for c in parts for x in c[3]]
    order = np.argsort(t, kind="stable")
    with np.errstate(over="ignore"):  # ±1e308 apart: an infinite span, refused below
        t = t[order] - t[order[0]]
    span = float(t[-1])
    if span <= 0:
        raise RooflensError(f"{p}: every timestamp is the same; the arrival rate is undefined")
    if (count - 1) / span > MAX_RATE_PER_S or span > MAX_SPAN_S:
        raise RooflensError(
            f"{p}: {count:,} requests over {span:.3g} s is not a serving load (rates up to "
            f"{MAX_RATE_PER_S:.0e} requests/s, spans up to {MAX_SPAN_S:.0e} s); are the "
            "timestamps in seconds?"
        )
    return RequestTrace(
        path=str(p),
        timestamp_s=tuple(t.tolist()),
        input_len=tuple(ins[order].tolist()),
        output_len=tuple(outs[order].tolist()),
        prefix_id=tuple(pid[i] for i in order.tolist()),
        prefix_len=tuple(plen[order].tolist()),
    )


# One batch of rows as columns: times (s), input and output lengths, prefix ids and lengths.
Columns = tuple[np.ndarray, np.ndarray, np.ndarray, list[str], np.ndarray]


def _as_columns(rows: list[tuple[float, int, int, str, int]]) -> Columns:
    return (np.array([r[0] for r in rows], dtype=float), np.array([r[1] for r in rows]),
            np.array([r[2] for r in rows]), [r[3] for r in rows],
            np.array([r[4] for r in rows]))  # fmt: skip


def _fast_columns(values: list[Any]) -> Columns | None:
    """A batch of well-formed rows as columns, checked a column at a time (about a microsecond
    a row); None when any row is off, so that `_row` finds it and says which."""
    if not values or set(map(type, values)) != {dict}:
        return None
    try:
        times = [d["timestamp"] for d in values]
        if not set(map(type, times)) <= {int, float}:  # not a boolean or text
            return None
        t = np.array(times, dtype=float)
        raw = {k: [d[k] for d in values] for k in ("input_len", "output_len")}
        raw["prefix_len"] = [d.get("prefix_len", 0) for d in values]
        if any(not set(map(type, v)) <= {int} for v in raw.values()):
            return None
        ins, outs, plen = (np.array(raw[k], dtype=np.int64) for k in raw)
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    pid = [d.get("prefix_id") for d in values]
    if not set(map(type, pid)) <= {str, type(None)}:
        return None
    named = np.array([bool(x) for x in pid])
    ok = (
        np.isfinite(t).all()
        and ((ins >= 1) & (ins <= MAX_TOKENS) & (outs >= 1) & (outs <= MAX_TOKENS)).all()
        and ((plen >= 0) & (plen <= ins) & ((plen > 0) == named)).all()
    )
    return (t, ins, outs, [x or "" for x in pid], plen) if ok else None


def _too_long(p: Path) -> str:
    return (f"{p}: more than {MAX_TRACE_REQUESTS:,} requests, the most `plan --trace` reads; "
            "give a sample of the trace (its rate and lengths are what the plan uses)")  # fmt: skip


def _lines(p: Path) -> int:
    """Newlines in a file, counted in 1 MiB blocks (no line is parsed or kept)."""
    count = 0
    with open(p, "rb") as handle:
        while block := handle.read(1 << 20):
            count += block.count(b"\n")
    return count


BATCH = 50_000  # lines parsed by one json.loads call (a million lines a second, not 80,000)


def _batches(lines: Iterable[str]) -> Iterator[list[tuple[int, str]]]:
    """(line number, text) of the non-blank lines, BATCH at a time."""
    batch: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        if line.strip():
            batch.append((number, line))
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _parse_batch(batch: list[tuple[int, str]]) -> list[Any]:
    try:
        values = json.loads("[" + ",".join(line for _, line in batch) + "]")
    except (json.JSONDecodeError, RecursionError):
        values = None
    if not isinstance(values, list) or len(values) != len(batch):  # find the bad line
        values = [_one(line) for _, line in batch]
    return values


def _one(line: str) -> Any:
    """One line's value; None (not an object: refused by `_row` in line order) if not JSON."""
    try:
        return json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return None


def _row(d: Any, number: int, p: Path) -> tuple[float, int, int, str, int]:
    if not isinstance(d, dict) or not all(k in d for k in FIELDS):
        _refuse_row(d, number, p)
    return _checked_row(d, f"{p} line {number}")


def _refuse_row(d: Any, number: int, p: Path) -> NoReturn:
    where = f"{p} line {number}"
    if not isinstance(d, dict):
        raise RooflensError(f"{where}: not a JSON object")
    missing = [k for k in FIELDS if k not in d]
    raise RooflensError(f"{where}: missing '{missing[0]}' (need {', '.join(FIELDS)})")


def _checked_row(d: dict[str, Any], where: str) -> tuple[float, int, int, str, int]:
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
