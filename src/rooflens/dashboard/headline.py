"""The Explore page's headline numbers, each with its unit, and their deltas against a baseline.

Values stay in SI (seconds, bytes, tokens/s, $) until `text`/`delta_text` format them at the
edge (DESIGN.md). Dollars per million output tokens come from model/planner/gpu_prices.py, energy
per token and its electricity cost from model/analysis/energy.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from rooflens.io.units import fmt_bytes, fmt_number, fmt_quantity, fmt_time
from rooflens.model.analysis.energy import energy
from rooflens.model.planner import gpu_prices as prices
from rooflens.model.predict.steps import Prediction


def usd_per_million_tokens(price_per_gpu_hour: float, n_gpus: int, tokens_per_s: float) -> float:
    """$ per 10⁶ output tokens at full utilisation (model/planner/gpu_prices.py's formula); nan
    when no price is set."""
    if price_per_gpu_hour <= 0 or tokens_per_s <= 0:
        return math.nan
    return float(prices.usd_per_million_tokens(price_per_gpu_hour * n_gpus, tokens_per_s))


USD_PER_M_LABEL = "$/M output tokens"  # the one name of this quantity on every page


def fmt_tokens_per_s(value: float) -> str:
    return fmt_quantity(value, "tokens/s")


def fmt_usd_per_m(value: float) -> str:
    if not math.isfinite(value):
        return "no price set"
    return f"${fmt_number(value)}"


def fmt_joules_per_token(value: float) -> str:
    return fmt_quantity(value, "J/token")


def energy_metric(pred: Prediction, usd_per_kwh: float = 0.0) -> Metric:
    """Board energy per output token (model/analysis/energy.py); tokens per joule and, given a $/kWh
    tariff, the electricity part of $/Mtok in its help."""
    e = energy(pred, usd_per_kwh)
    power = (
        f"{fmt_number(e.prefill_power_w)} W prefill, {fmt_number(e.decode_power_w)} W decode per "
        f"GPU (idle {fmt_number(e.idle_w)} W, TDP {fmt_number(e.tdp_w)} W)"
    )
    # the tile shows J/token only (it must fit at 1400 px); the rest goes in its help
    extra = f"{fmt_quantity(e.output_tokens_per_joule, 'tokens/J')}"
    if e.electricity_usd_per_million_tokens is not None:
        usd = fmt_usd_per_m(e.electricity_usd_per_million_tokens)
        extra += f"; electricity {usd} per M output tokens"
    return Metric("joules_per_output_token", "Energy", e.joules_per_output_token,
                  fmt_joules_per_token, True,
                  f"GPU board energy of the batch over its output tokens ({extra}): {power}; "
                  "idle plus utilisation-weighted dynamic power up to TDP "
                  "(model/analysis/energy.py)")  # fmt: skip


def fmt_sequences(value: float) -> str:
    return fmt_quantity(value, "sequences")


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    value: float  # SI
    fmt: Callable[[float], str]
    lower_is_better: bool
    help: str
    suffix: str = ""  # extra text after the value (also with a unit)

    @property
    def text(self) -> str:
        return self.fmt(self.value) + self.suffix

    def delta_text(self, baseline: Metric | None) -> str | None:
        """'+1.2 ms (+5.0 %)' against the baseline; None when there is none or no change."""
        if baseline is None or not (math.isfinite(self.value) and math.isfinite(baseline.value)):
            return None
        diff = self.value - baseline.value
        if diff == 0:
            return None
        sign = "+" if diff > 0 else "-"  # ASCII: Streamlit reads it for the arrow and colour
        rel = f" ({sign}{abs(diff) / abs(baseline.value) * 100:.1f} %)" if baseline.value else ""
        return f"{sign}{self.fmt(abs(diff))}{rel}"


def headline(
    pred: Prediction, price_per_gpu_hour: float, price_source: str = "", usd_per_kwh: float = 0.0
) -> list[Metric]:
    """The headline metrics; price 0 leaves cost unset, a $/kWh tariff adds electricity."""
    sc, mem = pred.scenario, pred.memory
    w = sc.workload
    cost = usd_per_million_tokens(price_per_gpu_hour, sc.parallel.n_gpus, pred.output_tokens_per_s)
    return [
        Metric("ttft_s", "TTFT", pred.ttft_s, fmt_time, True,
               f"time to first token: one prefill of {w.batch} × {w.prompt_len} tokens "
               f"({pred.prefill.bound}-bound)"),
        Metric("tpot_s", "TPOT", pred.tpot_s, fmt_time, True,
               f"mean decode step over output tokens 2..{w.output_len} "
               f"({pred.decode.bound}-bound)"),
        Metric("output_tokens_per_s", "Throughput", pred.output_tokens_per_s,
               fmt_tokens_per_s, False,
               f"output tokens per second, whole batch of {w.batch}: B·O / end-to-end time"),
        Metric("memory_total_bytes", "Memory per GPU", mem.total_bytes, fmt_bytes, True,
               "weights + KV cache + peak activations + runtime overhead",
               suffix=f" of {fmt_bytes(mem.capacity_bytes)}"),
        Metric("max_batch", "Max batch", float(mem.max_batch), fmt_sequences, False,
               f"largest batch that fits at a context of {sc.context_tokens:,} tokens"),
        Metric("usd_per_million_tokens", USD_PER_M_LABEL, cost, fmt_usd_per_m, True,
               f"{sc.parallel.n_gpus} GPU(s) at ${price_per_gpu_hour:,.2f} per GPU-hour "
               f"({price_source or 'no price set'}), fully used"),
        # no energy tile for a preset without a cited TDP (gh200: configurable module power)
        *([energy_metric(pred, usd_per_kwh)] if sc.gpu.tdp_watts is not None else []),
    ]  # fmt: skip


def ttft_text(pred: Prediction) -> str:
    """What Explore's TTFT assumes, unlike the planner's (model/planner/serving.py)."""
    w = pred.scenario.workload
    return (
        f"TTFT here prefills the whole batch at once ({w.batch:,} prompts of {w.prompt_len:,} "
        "tokens arriving together); the capacity planner's TTFT is per request, with requests "
        "arriving one by one (Poisson), so it is usually shorter"
    )


def e2e_text(pred: Prediction) -> str:
    return (
        f"end-to-end {fmt_time(pred.e2e_s)} per request; "
        f"{fmt_time(pred.e2e_per_output_token_s)} per output token including TTFT"
    )
