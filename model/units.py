"""Human units at the edge (DESIGN.md): SI inside, ms / GB / TFLOP/s only when shown."""

from __future__ import annotations

import math


def _round3(x: float) -> float:
    """x at three significant digits, so a unit boundary is decided after rounding."""
    return float(f"{x:.3g}")


def fmt_time(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "n/a"
    seconds = _round3(seconds)
    if seconds >= 1.0:
        return f"{seconds:.3g} s"
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
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def fmt_flops(n: float) -> str:
    n = _round3(n)
    units = (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3))
    for unit, scale in units:
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} FLOP"


def fmt_rate(n: float, unit: str) -> str:
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {prefix}{unit}"
    return f"{n:.3g} {unit}"
