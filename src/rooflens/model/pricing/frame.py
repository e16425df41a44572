"""The priced operators as rows: each op's kernel call as scalar cells (`kernels predict`
columns) and the operator table as a DataFrame (totals over `count`, SI units). The prices
themselves come from model/pricing/roofline.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooflens.model.ops.op import Op
from rooflens.model.pricing.roofline import PricedOp


def call_columns(op: Op) -> dict[str, Any]:
    """The op's kernel call as scalar cells (`kernels predict` columns); a grid's varying
    shape is given as its mean (the row's time is the mean over the grid too)."""
    out: dict[str, Any] = {}
    for key, value in op.call.items():
        if isinstance(value, str | bool):
            out[key] = value
        else:
            mean = float(np.mean(value))
            out[key] = int(mean) if mean.is_integer() else mean
    return out


def to_frame(priced: list[PricedOp]) -> pd.DataFrame:
    """One row per op with totals over `count` (scalar workloads), in SI units."""
    rows = []
    for p in priced:
        op = p.op
        rows.append(
            {
                "name": op.name,
                "phase": op.phase,
                "kind": op.kind,
                "count": op.count,
                "flops": float(np.mean(op.flops)) * op.count,
                "bytes": float(np.mean(op.bytes)) * op.count,
                "weight_bytes": float(np.mean(op.weight_bytes)) * op.count,
                "act_bytes": float(np.mean(op.act_bytes)) * op.count,
                "kv_bytes": float(np.mean(op.kv_bytes)) * op.count,
                "comm_bytes": float(np.mean(op.comm_bytes)) * op.count,
                "compute_s": float(np.mean(p.compute_s)) * op.count,
                "memory_s": float(np.mean(p.memory_s)) * op.count,
                "comm_s": float(np.mean(p.comm_s)) * op.count,
                "time_s": float(np.mean(p.total_s)),
                "compute_dtype": op.compute_dtype,
                "bound": p.bound,
            }
        )
    df = pd.DataFrame(rows)
    if not df.empty:
        with np.errstate(divide="ignore", invalid="ignore"):
            df["intensity"] = df["flops"] / df["bytes"].where(df["bytes"] > 0)
    return df
