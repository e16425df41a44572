"""GPU rental prices per GPU-hour: documented defaults (prices.yaml, each with source and date)
overridden by the user's own figures, and the one $/Mtok formula every caller uses (planner
rows, the dashboard headline; model/analysis/energy.py adds electricity on top)."""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import Any

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import read_data_file

PRICE_FILE = Path(__file__).parent / "prices.yaml"
SECONDS_PER_HOUR = 3600.0
TOKENS_PER_MILLION = 1e6


def usd_per_million_tokens(usd_per_hour: Any, tokens_per_s: Any) -> Any:
    """$ per 10⁶ output tokens for hardware costing `usd_per_hour` (all its GPUs together)
    that produces `tokens_per_s`, fully used: $/h ÷ 3600 s/h ÷ tokens/s × 10⁶. Scalars or
    numpy arrays."""
    return usd_per_hour / SECONDS_PER_HOUR / tokens_per_s * TOKENS_PER_MILLION


@cache
def default_prices() -> dict[str, dict[str, Any]]:
    """GPU id -> {usd_per_hour, source}."""
    return read_data_file(PRICE_FILE)


def read_price_file(path: str) -> dict[str, float]:
    """A YAML/JSON mapping `id: usd` or `id: {usd_per_hour: usd, ...}`."""
    out = {}
    for gpu, value in read_data_file(Path(path)).items():
        usd = value.get("usd_per_hour") if isinstance(value, dict) else value
        out[str(gpu)] = _positive(gpu, usd)
    return out


def parse_price(text: str) -> tuple[str, float]:
    """`h100-sxm=2.5` -> ('h100-sxm', 2.5)."""
    gpu, sep, usd = text.partition("=")
    if not sep:
        raise RooflensError(f"--price {text}: expected GPU=USD_PER_HOUR, e.g. h100-sxm=2.5")
    return gpu.strip(), _positive(gpu, usd)


def _positive(gpu: str, value: Any) -> float:
    try:
        usd = float(value)
    except (TypeError, ValueError):
        raise RooflensError(f"price for {gpu}: '{value}' is not a number of USD per hour") from None
    if not (usd > 0 and math.isfinite(usd)):
        raise RooflensError(f"price for {gpu} must be a finite number > 0 USD per hour, got {usd}")
    return usd


def price_per_gpu_hour(gpu_id: str, overrides: dict[str, float]) -> tuple[float, str]:
    """(USD per GPU-hour, where it comes from). A GPU without a price is an error naming
    the fix, since a cost ranking without it would be silently wrong."""
    if gpu_id in overrides:
        return overrides[gpu_id], "user"
    entry = default_prices().get(gpu_id)
    if entry is None:
        raise RooflensError(
            f"no price for GPU '{gpu_id}': give one with --price {gpu_id}=USD_PER_HOUR"
        )
    return float(entry["usd_per_hour"]), str(entry["source"])
