"""The capacity planner page's tables, in the page's words: the Pareto frontier (pairs of numbers
sharing a column, so every column fits a 1400-px window) and the simulation check, one row per
simulated configuration, each naming its serving engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from rooflens.dashboard.headline import USD_PER_M_LABEL, fmt_usd_per_m
from rooflens.dashboard.numbers import fmt_sig
from rooflens.io.units import fmt_bytes, fmt_number, fmt_quantity, fmt_time
from rooflens.model.planner.check import roles
from rooflens.model.planner.explain import engine_name
from rooflens.model.specs.quant import precision_label


def _precision(row: Mapping[Any, Any]) -> str:
    return precision_label(row["weight_dtype"], row["act_dtype"], row["kv_dtype"],
                           row.get("scheme", ""))  # fmt: skip


def frontier_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The Pareto frontier, pairs of numbers sharing a column so every column fits a 1400-px
    window."""
    return pd.DataFrame(
        {
            "GPUs": [f"{n} × {g}" for n, g in zip(rows["n_gpus"], rows["gpu"], strict=True)],
            "engine": [engine_name(r) for r in rows.to_dict("records")],
            "TP": rows["tp"],
            "precision": [_precision(r) for r in rows.to_dict("records")],
            "scheduler": rows["mode"],
            "batch cap": [fmt_quantity(v, "sequences") for v in rows["batch"]],
            "TTFT / TPOT p99": [
                f"{fmt_time(a)} / {fmt_time(b)}"
                for a, b in zip(rows["ttft_p99_s"], rows["tpot_p99_s"], strict=True)
            ],
            "tokens/s: GPU / user": [
                f"{fmt_number(a)} / {fmt_number(b)}"
                for a, b in zip(
                    rows["tokens_per_s_per_gpu"], rows["tokens_per_s_per_user"], strict=True
                )
            ],
            f"$ per hour / {USD_PER_M_LABEL}": [
                f"${fmt_number(a)} / {fmt_usd_per_m(b)}"
                for a, b in zip(rows["cost_per_hour"], rows["cost_per_million_tokens"], strict=True)
            ],
            "memory/GPU": [fmt_bytes(v) for v in rows["memory_per_gpu_bytes"]],
            "replicas": [_replicas(r) for r in rows.to_dict("records")],
            "goodput (per replica)": [
                f"{fmt_quantity(g, 'requests/s')} ({fmt_number(g / _replica_count(r))})"
                for g, r in zip(
                    rows["goodput_requests_per_s"], rows.to_dict("records"), strict=True
                )
            ],
        }
    )


def _replica_count(row: Mapping[Any, Any]) -> int:
    """Replicas serving requests: the decode replicas of a disaggregated pair."""
    return max(int(row.get("decode_replicas") or row.get("replicas") or 1), 1)


def _replicas(row: Mapping[Any, Any]) -> str:
    if row["mode"] == "disaggregated":
        return f"{row['prefill_replicas']} prefill + {row['decode_replicas']} decode"
    return f"{row['replicas']:,}"


def simulation_table(sims: list[dict[str, Any]]) -> pd.DataFrame:
    """The simulation check, one row per simulated configuration, times with their units."""
    rows = []
    for sim in sims:
        c = sim["config"]
        gpu = c["gpu"] if c.get("prefill_gpu") in (None, "", c["gpu"]) else (
            f"{c['prefill_gpu']} → {c['gpu']}")  # fmt: skip
        layout = f"{c['n_gpus']} × {gpu} TP {c['tp']}" + (
            f" PP {c['pp']}" if c.get("pp", 1) > 1 else ""
        )
        flags = [f"optimistic: {f}" for f in sim.get("optimistic", [])] + [
            f"misses the {m} SLO" for m in sim.get("sim_misses_slo", [])
        ]
        rows.append(
            {
                "role": roles(sim),
                "configuration": f"{layout}, {engine_name(c)}, {_precision(c)}, "
                f"{c['mode']}, batch cap {c['batch']:,}",
                "requests counted": f"{sim['n_requests']:,}",
                "TTFT p50 / p99": f"{fmt_time(sim['ttft_p50_s'])} / {fmt_time(sim['ttft_p99_s'])}",
                "TPOT p50 / p99": f"{fmt_time(sim['tpot_p50_s'])} / {fmt_time(sim['tpot_p99_s'])}",
                "mean batch (sequences)": fmt_sig(sim["mean_batch"]),
                "goodput at this load": f"{fmt_sig(sim['goodput_requests_per_s'])} requests/s",
                "analytical vs simulated": "; ".join(flags) or "agree",
            }
        )
    return pd.DataFrame(rows)
