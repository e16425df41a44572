"""Human units at the edge (DESIGN.md): SI inside, ms / GB / TFLOP/s only when shown."""

from __future__ import annotations

import math


def _round3(x: float) -> float:
    """x at three significant digits, so a unit boundary is decided after rounding."""
    return float(f"{x:.3g}")


def fmt_number(x: float) -> str:
    """Three significant digits, thousands separated, never an exponent: '12,200', '1.22',
    '0.0005'."""
    if not math.isfinite(x):
        return "n/a"
    x = _round3(x)
    if x == 0 or abs(x) >= 100:
        return f"{x:,.0f}"
    decimals = 2 - math.floor(math.log10(abs(x)))
    return f"{x:.{decimals}f}".rstrip("0").rstrip(".")


# Long times in the units people plan in, each up to 100 of it: never '1.22e+04 s'.
LONG_TIME_UNITS = (("min", 60.0), ("h", 3_600.0), ("days", 86_400.0))


def fmt_time(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "n/a"
    seconds = _round3(seconds)
    if seconds >= 100:
        unit, scale = next(
            ((u, k) for u, k in LONG_TIME_UNITS if seconds < 100 * k), LONG_TIME_UNITS[-1]
        )
        return f"{fmt_number(seconds / scale)} {unit}"
    if seconds >= 1.0:
        return f"{fmt_number(seconds)} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    if seconds >= 1e-6 or seconds == 0:
        return f"{seconds * 1e6:.3g} µs"
    return f"{seconds * 1e9:.3g} ns"


def fmt_bytes(n: float) -> str:
    """Decimal units (GB = 1e9 bytes), as datasheets quote memory and bandwidth."""
    n = _round3(n)
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{fmt_number(n / scale)} {unit}"
    return f"{n:.0f} B"


def fmt_flops(n: float) -> str:
    n = _round3(n)
    units = (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3))
    for unit, scale in units:
        if abs(n) >= scale:
            return f"{fmt_number(n / scale)} {unit}"
    return f"{n:.0f} FLOP"


def fmt_rate(n: float, unit: str) -> str:
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{fmt_number(n / scale)} {prefix}{unit}"
    return f"{fmt_number(n)} {unit}"


def fmt_quantity(n: float, unit: str) -> str:
    """A count or a rate of whole things: '950 tokens/s', '9,500 tokens/s', '12.3 k tokens/s',
    '1.2 M tokens/s' (a prefix from 10⁴ up, so a tile stays short)."""
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= max(scale, 1e4):
            return f"{fmt_number(n / scale)} {prefix} {unit}"
    return f"{fmt_number(n)} {unit}"
