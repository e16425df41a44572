"""Numbers as a person reads them: three significant digits, thousands separators, and log-axis
ticks on a 1-2-5 sequence labelled with their unit.

Pure functions (no Streamlit, no plotly): tables and figures call them at the edge, after the
model has computed in SI. Plotly's own log ticks label every minor digit ("2 3 4 5 … 9") once an
axis spans less than about two decades, and print "100k" for 100,000 ms; `log_axis` picks ticks
and labels instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rooflens.io.units import fmt_number

SIGNIFICANT_DIGITS = 3
MANTISSAS = (1.0, 2.0, 5.0)
FINE_MANTISSAS = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)
MAX_TICKS = 9
PAD = 1.3  # room around the data on a log axis, as a factor


def sig(values: Any, digits: int = SIGNIFICANT_DIGITS) -> Any:
    """Round to `digits` significant digits (elementwise; nan, inf and 0 pass through)."""
    if isinstance(values, int | float):  # the scalar path: ~40× faster than numpy's
        return float(f"{values:.{digits}g}")
    x = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        magnitude = np.floor(np.log10(np.abs(x)))
        magnitude = np.where(np.isfinite(magnitude), magnitude, 0.0)
        scale = 10.0 ** (digits - 1 - magnitude)
        out = np.where(np.isfinite(x), np.round(x * scale) / scale, x)
    return out if out.ndim else float(out)


def fmt_sig(value: float, unit: str = "") -> str:
    """'1,320', '0.625', '47,600 FLOP/byte': three significant digits, thousands separated."""
    if not math.isfinite(value):
        return "—"
    return f"{fmt_number(value)} {unit}".rstrip()


def _ticks(lo: float, hi: float, mantissas: Sequence[float]) -> list[float]:
    out = []
    for exponent in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        out += [m * 10.0**exponent for m in mantissas if lo <= m * 10.0**exponent <= hi]
    return out


def log_ticks(lo: float, hi: float) -> list[float]:
    """1-2-5 ticks covering [lo, hi]: denser under a decade, thinned to decades (or every other
    decade) when there would be more than MAX_TICKS."""
    if not (lo > 0 and hi >= lo and math.isfinite(hi)):
        return []
    ticks = _ticks(lo, hi, MANTISSAS)
    if len(ticks) < 4:  # less than a decade: denser ticks
        ticks = _ticks(lo, hi, FINE_MANTISSAS)
    if len(ticks) > MAX_TICKS:
        ticks = _ticks(lo, hi, (1.0,))
    if len(ticks) > MAX_TICKS:
        ticks = [t for t in ticks if round(math.log10(t)) % 2 == 0]
    if len(ticks) < 2:  # a narrow range: its ends, so the axis still reads
        ticks = sorted({float(sig(lo, 2)), float(sig(hi, 2))})
    return ticks


def fmt_ms(ms: float) -> str:
    """A time tick given in milliseconds: '500 ms', '2 s', '20 µs'."""
    seconds = ms / 1e3
    if seconds >= 1:
        return f"{seconds:,g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:g} ms"
    return f"{seconds * 1e6:g} µs"


def fmt_count(value: float, unit: str = "") -> str:
    """'1,000', '20k', '5M' (+ unit): compact, for ticks."""
    for suffix, scale in (("M", 1e6), ("k", 1e3)):
        if abs(value) >= 10 * scale or (abs(value) >= scale and value % scale == 0):
            return f"{value / scale:g}{suffix} {unit}".rstrip()
    return f"{value:g} {unit}".rstrip()


def log_axis(
    values: Sequence[float] | np.ndarray, fmt: Callable[[float], str], **axis: Any
) -> dict[str, Any]:
    """A plotly log axis over the positive values (padded by PAD either side, as plotly's
    autorange would) whose ticks sit on 1-2-5 values labelled by `fmt` (with the unit)."""
    arr = np.asarray([v for v in np.ravel(np.asarray(values, dtype=float)) if v > 0])
    out: dict[str, Any] = {"type": "log", **axis}
    if len(arr):
        lo, hi = float(arr.min()) / PAD, float(arr.max()) * PAD
        ticks = log_ticks(lo, hi)
        out.update(range=[math.log10(lo), math.log10(hi)], tickmode="array", tickvals=ticks,
                   ticktext=[fmt(t) for t in ticks])  # fmt: skip
    return out
