"""Helpers for the dashboard tests: read the numbers AppTest shows back into SI units and pull
plotly figures out of the rendered page."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "app.py"

UNITS = {
    "ns": 1e-9,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "min": 60.0,
    "h": 3600.0,
    "days": 86400.0,
    "B": 1.0,
    "kB": 1e3,
    "MB": 1e6,
    "GB": 1e9,
    "TB": 1e12,
    "tokens/s": 1.0,
    "sequences": 1.0,
    "kB/token": 1e3,
    "B/token": 1.0,
    "J/token": 1.0,
    "%": 0.01,
    "FLOP": 1.0,
    "kFLOP": 1e3,
    "MFLOP": 1e6,
    "GFLOP": 1e9,
    "TFLOP": 1e12,
    "PFLOP": 1e15,
}
_QUANTITY = re.compile(r"^\$?(-?[\d,]*\.?\d+)\s*(?:([kMGT]) )?(\S+(?:/\S+)?)?")
PREFIXES = {None: 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def si(text: str) -> float:
    """'12.2 ms' -> 0.0122; '37.7 GB of 85.5 GB' -> 3.77e10; '1.2 M tokens/s' -> 1.2e6; a unit
    the table lacks, or an exponent ('1.22e+04 s', which the dashboard never shows), fails."""
    match = _QUANTITY.match(text.strip())
    assert match, f"no number in {text!r}"
    number, unit = float(match.group(1).replace(",", "")), match.group(3) or ""
    assert unit in UNITS, f"unknown unit {unit!r} in {text!r}"
    return number * PREFIXES[match.group(2)] * UNITS[unit]


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _decode(value: Any) -> Any:
    """Plotly ships numpy arrays as typed arrays ({'dtype', 'bdata': base64}); make lists."""
    if isinstance(value, dict):
        if "bdata" in value and "dtype" in value:
            flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
            shape = value.get("shape")
            if isinstance(shape, str):
                flat = flat.reshape([int(n) for n in shape.split(",")])
            return flat.tolist()
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def figures(at: AppTest) -> list[dict[str, Any]]:
    return [_decode(json.loads(chart.proto.spec)) for chart in at.get("plotly_chart")]


def trace(fig: dict[str, Any], name: str) -> dict[str, Any]:
    for t in fig["data"]:
        if t.get("name") == name:
            return t
    raise AssertionError(f"no trace {name!r} in {[t.get('name') for t in fig['data']]}")


def assert_clean(at: AppTest) -> None:
    """Rendered without an exception and without an error box."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
