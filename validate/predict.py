"""Vectorised predictions for kernel tables: the same operators and pricing as
`model.kernel_predict.predict_kernels`, one `price_op` call per group of rows instead of per row.

A measurement table has 10⁵ rows; pricing each row alone takes minutes, and calibration prices
them thousands of times. Rows of one op and dtype become one `Op` whose shapes are numpy arrays
(every formula in model/ops.py is elementwise), priced once.
tests/validate/test_vectorised_predict.py checks the result equals predict_kernels row for row
(`moe` included: model/moe.py). Besides the contract's ops this prices the validator's
memory-bound ops (see validate/datasets.py) with model/ops.py's own formulas.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from hardware.errors import RooflensError
from hardware.presets import default_system
from hardware.profiles import Profile, get_profile
from hardware.spec import GPUSpec
from model.dtypes import dtype_bytes
from model.kernel_predict import check_moe_layout, normalize_dtype
from model.moe import moe_op
from model.ops import Op, attention_op, gemm_op
from model.pricing import price_op

ATTENTION_OPS = ("attention_prefill", "attention_decode")
WEIGHT_OPS = ("gemm", "moe")  # ops with an optional weight_dtype (weight-only quantization)
NORM_WEIGHT_BYTES = 2.0  # norm weights stay 16-bit (model/ops.py, _Builder.norm)
EMBED_WEIGHT_BYTES = 2.0  # embedding rows are read in 16 bits (model/ops.py, _Builder.build)


@dataclass(frozen=True)
class Batch:
    """One Op holding many rows (array shapes) and the row positions it covers."""

    op: Op
    index: np.ndarray


def _col(frame: pd.DataFrame, name: str) -> np.ndarray:
    if name not in frame.columns:
        raise RooflensError(f"op {frame['op'].iloc[0]} needs a '{name}' column")
    values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=np.float64)
    if np.isnan(values).any() or (values <= 0).any():
        op = frame["op"].iloc[0]
        raise RooflensError(f"column {name} must hold positive numbers for op {op}")
    return values


def _optional(frame: pd.DataFrame, name: str) -> np.ndarray | None:
    """An optional numeric column (NaN where a row leaves it empty), None when absent."""
    if name not in frame.columns:
        return None
    values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=np.float64)
    if (values <= 0).any():
        op = frame["op"].iloc[0]
        raise RooflensError(f"column {name} must hold positive numbers for op {op}")
    return values


def _dtype(frame: pd.DataFrame, name: str, fallback: pd.Series | None = None) -> pd.Series:
    """Normalised dtype names of a column; empty cells (or a missing column) take `fallback`."""
    if name not in frame.columns:
        if fallback is None:
            raise RooflensError(f"op {frame['op'].iloc[0]} needs a '{name}' column")
        return fallback
    values = frame[name]
    given = values.notna() & (values.astype(str).str.strip() != "")
    out = values.where(~given, values[given].map(lambda v: normalize_dtype(v, name, -1)))
    if fallback is not None:
        out = out.where(given, fallback)
    return out


def _memory_op(name: str, kind: str, flops: np.ndarray, act: np.ndarray, weight: np.ndarray) -> Op:
    return Op(name=name, phase="kernel", kind=kind, count=1, flops=flops, weight_bytes=weight,
              act_bytes=act, kv_bytes=0.0 * act, compute_dtype="fp32", live_bytes=act)  # fmt: skip


def _group_op(op_name: str, g: pd.DataFrame, dtype: str, extra: str, group_size: int) -> Op:
    """The Op for rows of one op name and dtype (`extra`: kv or weight dtype, or norm type)."""
    if op_name == "gemm":
        return gemm_op("gemm", "kernel", 1, _col(g, "m"), _col(g, "n"), _col(g, "k"),
                       extra, dtype, group_size)  # fmt: skip
    if op_name in ATTENTION_OPS:
        heads, kv_heads = _col(g, "n_heads"), _col(g, "n_kv_heads")
        if (np.mod(heads, kv_heads) != 0).any():
            raise RooflensError("n_kv_heads must divide n_heads in every attention row")
        if op_name == "attention_prefill":
            T = L = _col(g, "seq_len")
        else:
            T, L = np.ones(len(g)), _col(g, "kv_len")
        return attention_op("kernel", 1, _col(g, "batch"), T, L, heads, kv_heads,
                            _col(g, "head_dim"), dtype, extra)  # fmt: skip
    if op_name == "moe":  # model/moe.py: this GPU's experts and its slice of their width
        inter, experts, topk = _col(g, "inter_size"), _col(g, "num_experts"), _col(g, "topk")
        tp, ep = _col(g, "moe_tp_size"), _col(g, "moe_ep_size")
        check_moe_layout(inter, experts, topk, tp, ep, "op moe")
        return moe_op("kernel", 1, _col(g, "num_tokens"), _col(g, "hidden_size"), inter / tp,
                      topk, experts, ep, extra, dtype, group_size,
                      assignments=_optional(g, "assignments"),
                      experts_read=_optional(g, "experts_read"))  # fmt: skip
    ab = dtype_bytes(dtype)
    if op_name == "norm":  # model/ops.py _Builder.norm: 5 FLOPs per element, 1 or 2 streams
        n, D = _col(g, "rows"), _col(g, "hidden")
        streams = 1.0 + pd.to_numeric(g.get("residual", 0), errors="coerce").fillna(0).to_numpy()
        weights = (2.0 if extra == "layernorm" else 1.0) * D * NORM_WEIGHT_BYTES
        return _memory_op("norm", "norm", 5.0 * n * D, 2 * streams * n * D * ab, weights)
    if op_name == "elementwise":  # one FLOP per output element; memory-bound by construction
        read, written = _col(g, "elements_read"), _col(g, "elements_written")
        return _memory_op("elementwise", "elementwise", written, (read + written) * ab, 0 * read)
    if op_name == "embedding":  # gather n rows of the table, write [n, D]
        n, D = _col(g, "rows"), _col(g, "hidden")
        return _memory_op("embed", "embedding", 0 * n, n * D * ab, n * D * EMBED_WEIGHT_BYTES)
    raise RooflensError(
        f"unknown op '{op_name}'; use one of gemm, attention_prefill, attention_decode, moe, "
        "norm, elementwise, embedding"
    )


def batches(table: pd.DataFrame) -> list[Batch]:
    """Group a kernel table into array-shaped Ops (positions refer to `table`'s row order)."""
    if "op" not in table.columns:
        raise RooflensError("input needs an 'op' column (gemm, attention_prefill, ...)")
    frame = table.reset_index(drop=True)
    dtype = _dtype(frame, "dtype")
    extra = pd.Series("", index=frame.index, dtype=object)
    is_gemm, is_attn = frame["op"].isin(WEIGHT_OPS), frame["op"].isin(ATTENTION_OPS)
    if is_gemm.any():
        extra[is_gemm] = _dtype(frame[is_gemm], "weight_dtype", dtype[is_gemm])
    if is_attn.any():
        extra[is_attn] = _dtype(frame[is_attn], "kv_dtype", dtype[is_attn])
    if "norm" in frame.columns:
        is_norm = frame["op"] == "norm"
        extra[is_norm] = frame.loc[is_norm, "norm"].fillna("rmsnorm").astype(str)
    group_size = pd.Series(128, index=frame.index)
    if "group_size" in frame.columns:
        group_size = pd.to_numeric(frame["group_size"], errors="coerce").fillna(128).astype(int)
    out = []
    keys = [frame["op"].astype(str), dtype, extra, group_size]
    for (op_name, dt, ex, gs), g in frame.groupby(keys, sort=False):
        out.append(Batch(_group_op(str(op_name), g, str(dt), str(ex), int(gs)), g.index.to_numpy()))
    return out


def predict_frame(
    table: pd.DataFrame, gpu: GPUSpec, profile: str | Profile = "ideal", detail: bool = False
) -> pd.DataFrame:
    """`table` plus flops, bytes, predicted_s and bound (the columns predict_kernels adds);
    `detail` adds compute_dtype, compute_s and memory_s (the roofs, per call)."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile, gpu)
    system = default_system(gpu)
    n = len(table)
    flops, nbytes, time_s = np.zeros(n), np.zeros(n), np.zeros(n)
    bound, dtypes = np.empty(n, dtype=object), np.empty(n, dtype=object)
    compute_s, memory_s = np.zeros(n), np.zeros(n)
    for b in batches(table):
        priced = price_op(b.op, system, prof)
        flops[b.index] = np.broadcast_to(b.op.flops, b.index.shape)
        nbytes[b.index] = np.broadcast_to(b.op.bytes, b.index.shape)
        time_s[b.index] = np.broadcast_to(priced.time_s, b.index.shape)
        compute_bound = np.asarray(priced.compute_s) >= np.asarray(priced.memory_s)
        bound[b.index] = np.where(compute_bound, "compute", "memory")
        dtypes[b.index] = b.op.compute_dtype
        compute_s[b.index] = np.broadcast_to(priced.compute_s, b.index.shape)
        memory_s[b.index] = np.broadcast_to(priced.memory_s, b.index.shape)
    result = table.copy()
    result["flops"], result["bytes"] = flops, nbytes
    result["predicted_s"], result["bound"] = time_s, bound
    if detail:
        result["compute_dtype"] = dtypes
        result["compute_s"], result["memory_s"] = compute_s, memory_s
    return result
