"""Single-kernel prediction with the CSV contract of DESIGN.md (`rooflens kernels predict`).

Each row is priced through the same operator constructors the model's tables use (gemm_op,
attention_op, moe_op), so a measured kernel table joins with predictions on identical keys.

`moe` (an extension of DESIGN.md's contract) is one fused MoE layer's routed experts on one GPU
(vLLM fused_moe: gated experts, gate+up then down): `num_tokens` routed top-`topk` over
`num_experts`, of which num_experts / moe_ep_size live on this GPU, each inter_size /
moe_tp_size wide; optional `weight_dtype` (and `group_size`) for quantized experts, and
`assignments` (token-expert pairs this GPU computes) and `experts_read` (its distinct experts
touched) where the routing is known; without them routing is uniform (model/moe.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from hardware.errors import RooflensError
from hardware.presets import default_system
from hardware.profiles import get_profile
from hardware.spec import GPUSpec
from model.dtypes import STORAGE_DTYPES
from model.moe import moe_op
from model.op import Num
from model.ops import Op, attention_op, gemm_op
from model.pricing import price_op

REQUIRED: dict[str, tuple[str, ...]] = {
    "gemm": ("m", "n", "k", "dtype"),
    "attention_prefill": (
        "batch", "seq_len", "n_heads", "n_kv_heads", "head_dim", "dtype", "kv_dtype",
    ),
    "attention_decode": (
        "batch", "kv_len", "n_heads", "n_kv_heads", "head_dim", "dtype", "kv_dtype",
    ),
    "moe": (
        "num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
        "moe_ep_size", "dtype",
    ),
}  # fmt: skip
OUTPUT_COLUMNS = ("flops", "bytes", "predicted_s", "bound")
DTYPE_ALIASES = {
    "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32", "float": "fp32",
    "float8": "fp8", "fp8_e4m3": "fp8", "float8_e4m3fn": "fp8", "e4m3": "fp8",
}  # fmt: skip


def normalize_dtype(value: object, column: str, row: int) -> str:
    text = str(value).strip().lower()
    text = DTYPE_ALIASES.get(text, text)
    if text not in STORAGE_DTYPES:
        raise RooflensError(
            f"row {row}: {column}='{value}' is not a dtype; use one of {', '.join(STORAGE_DTYPES)}"
        )
    return text


def row_op(op_name: str, row: pd.Series, index: int) -> Op:
    """The Op a kernel-table row describes (head counts are per GPU)."""

    def num(col: str) -> int:
        return cell_int(row[col], col, index)

    def dtype(col: str, default: str | None = None) -> str:
        value = row.get(col)
        if (value is None or pd.isna(value) or value == "") and default:
            return default
        return normalize_dtype(value, col, index)

    if op_name == "moe":
        return moe_row_op(row, index, num, dtype)
    if op_name == "gemm":
        act = dtype("dtype")
        group = group_size(row, index)
        return gemm_op("gemm", "kernel", 1, num("m"), num("n"), num("k"),
                       dtype("weight_dtype", act), act, group)  # fmt: skip
    heads, kv_heads = num("n_heads"), num("n_kv_heads")
    if heads % kv_heads:
        raise RooflensError(f"row {index}: n_kv_heads ({kv_heads}) must divide n_heads ({heads})")
    if op_name == "attention_prefill":
        S = num("seq_len")
        T, L = S, S
    else:
        T, L = 1, num("kv_len")
    return attention_op("kernel", 1, num("batch"), T, L, heads, kv_heads, num("head_dim"),
                        dtype("dtype"), dtype("kv_dtype", dtype("dtype")))  # fmt: skip


def check_moe_layout(inter: Num, experts: Num, topk: Num, tp: Num, ep: Num, where: str) -> None:
    """moe_tp_size must divide inter_size, moe_ep_size num_experts, and topk ≤ num_experts."""
    if np.any(np.mod(inter, tp) != 0):
        raise RooflensError(f"{where}: moe_tp_size must divide inter_size")
    if np.any(np.mod(experts, ep) != 0):
        raise RooflensError(f"{where}: moe_ep_size must divide num_experts")
    if np.any(np.asarray(topk) > np.asarray(experts)):
        raise RooflensError(f"{where}: topk must not exceed num_experts")


def moe_row_op(row: pd.Series, index: int, num: Any, dtype: Any) -> Op:
    """A `moe` row's Op: model/moe.py's formula with this GPU's experts and inter slice."""
    inter, experts, topk = num("inter_size"), num("num_experts"), num("topk")
    tp, ep = num("moe_tp_size"), num("moe_ep_size")
    check_moe_layout(inter, experts, topk, tp, ep, f"row {index}")
    act = dtype("dtype")
    group = group_size(row, index)
    pairs = optional_positive(row, "assignments", index)
    if pairs is not None and pairs > num("num_tokens") * topk:
        raise RooflensError(
            f"row {index}: assignments={pairs:g} exceeds num_tokens × topk token-expert pairs"
        )
    read = optional_positive(row, "experts_read", index)
    if read is not None and read > experts / ep:
        raise RooflensError(
            f"row {index}: experts_read={read:g} exceeds the {experts // ep} experts on this GPU"
        )
    return moe_op("kernel", 1, num("num_tokens"), num("hidden_size"), inter / tp, topk, experts,
                  ep, dtype("weight_dtype", act), act, group,
                  assignments=pairs,
                  experts_read=read)  # fmt: skip


# The largest size a kernel indexes (int32): anything larger is a typing slip, and would
# overflow the counts into inf.
MAX_SIZE = 2**31 - 1


def cell_int(value: object, column: str, index: int) -> int:
    """A cell that must hold a whole number in 1..MAX_SIZE (as text, int or float)."""
    try:
        number = float(str(value).strip())
    except ValueError:
        number = float("nan")
    if not (np.isfinite(number) and 1 <= number <= MAX_SIZE and number == int(number)):
        raise RooflensError(
            f"row {index}: {column} must be an integer in 1..{MAX_SIZE:,}, got {value!r}"
        )
    return int(number)


def group_size(row: pd.Series, index: int) -> int:
    """Weights per quantization scale: a positive integer, 128 when the column is empty."""
    value = row.get("group_size")
    if value is None or (not isinstance(value, str) and pd.isna(value)) or value == "":
        return 128
    return cell_int(value, "group_size", index)


def optional_positive(row: pd.Series, column: str, index: int) -> float | None:
    """An optional numeric cell: None when absent or empty, else a finite positive number."""
    value = row.get(column)
    if value is None or (not isinstance(value, str) and pd.isna(value)) or value == "":
        return None
    try:
        number = float(str(value).strip())
    except ValueError:
        number = float("nan")
    if not (np.isfinite(number) and 0 < number <= MAX_SIZE):
        raise RooflensError(f"row {index}: {column} must be a positive number, got {value!r}")
    return number


def predict_kernels(table: pd.DataFrame, gpu: GPUSpec, profile: str = "ideal") -> pd.DataFrame:
    """Every input column unchanged plus flops, bytes, predicted_s and bound."""
    if "op" not in table.columns:
        raise RooflensError(
            "input needs an 'op' column (gemm, attention_prefill, attention_decode, moe)"
        )
    system = default_system(gpu)
    prof = get_profile(profile, gpu)
    out = {c: [] for c in OUTPUT_COLUMNS}  # type: dict[str, list[object]]
    for index, row in table.iterrows():
        op_name = str(row["op"]).strip()
        if op_name not in REQUIRED:
            raise RooflensError(
                f"row {index}: unknown op '{op_name}'; use one of {', '.join(REQUIRED)}"
            )
        missing = [c for c in REQUIRED[op_name] if c not in table.columns]
        if missing:
            raise RooflensError(f"op {op_name} needs columns {', '.join(missing)}")
        priced = price_op(row_op(op_name, row, int(str(index))), system, prof)
        out["flops"].append(float(priced.op.flops))
        out["bytes"].append(float(priced.op.bytes))
        out["predicted_s"].append(float(np.asarray(priced.time_s)))
        out["bound"].append(priced.bound)
    return table.assign(
        **{column: pd.Series(values, index=table.index) for column, values in out.items()}
    )
