"""Kernel-table prediction with the CSV contract of DESIGN.md (`rooflens kernels predict`), and
the validator's and calibration's pricing of measured tables: the one kernel-table predictor.

Rows of one op and variant become one `Op` whose shapes are numpy arrays, built by the same
constructors the operator table uses (model/ops/op.py, model/ops/attention.py, model/ops/mla.py,
model/ops/moe.py, with the GPU's SM count for attention's grid) and priced by
model/pricing/roofline.py's `price_op`. So any row of the operator table re-prices from its call
(`Op.call`) to the same seconds, and a measured kernel table joins with predictions on
identical keys. A measurement table has 10⁵ rows, priced thousands of times by calibration:
one `price_op` call per group of rows, not per row.

The columns each op reads, and their checks, are in model/pricing/kernel_columns.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.profiles import Profile, get_profile
from rooflens.hardware.spec import GPUSpec, SystemSpec
from rooflens.hardware.systems import default_system
from rooflens.model.ops.attention import attention_op
from rooflens.model.ops.mla import mla_decode_op, mla_prefill_op
from rooflens.model.ops.moe import moe_op
from rooflens.model.ops.op import Op, comm_op, elementwise_op, embedding_op, gemm_op, norm_op
from rooflens.model.pricing.kernel_columns import (
    REQUIRED,
    SECOND_DTYPE,
    VARIANT_COLUMNS,
    Group,
    Rows,
    at_most,
    check_moe_layout,
    dtype_column,
    flag,
    group_sizes,
)
from rooflens.model.pricing.l2_resident import REPLAY_COPIES, replayed
from rooflens.model.pricing.roofline import price_op
from rooflens.model.specs.quant import FAMILIES


@dataclass(frozen=True)
class Batch:
    """One Op holding many rows (array shapes) and the row positions it covers."""

    op: Op
    index: np.ndarray


def _attention(grp: Group, sm_count: int) -> Op:
    dtype, kv_dtype, window = grp.dtype, grp.extra, int(grp.variant("window", 0))
    if grp.op in ("attention_decode", "mla_decode"):
        L = grp.col("kv_len")
        T = grp.optional("new_tokens", 1.0) if grp.op == "mla_decode" else np.ones(len(L))
    else:
        L = grp.col("seq_len")
        T = grp.optional("new_tokens", L)
    B, H = grp.col("batch"), grp.col("n_heads")
    if grp.op == "mla_decode":
        return mla_decode_op("kernel", 1, B, T, L, H, grp.col("kv_lora_rank"),
                             grp.col("rope_dim"), dtype, kv_dtype, window, sm_count)  # fmt: skip
    if grp.op == "mla_prefill":
        return mla_prefill_op("kernel", 1, B, T, L, H, grp.col("qk_head_dim"),
                              grp.col("v_head_dim"), grp.col("kv_lora_rank"), grp.col("rope_dim"),
                              dtype, kv_dtype, window, sm_count)  # fmt: skip
    kv_heads = grp.col("n_kv_heads")
    if (np.mod(H, kv_heads) != 0).any():
        raise RooflensError("n_kv_heads must divide n_heads in every attention row")
    return attention_op("kernel", 1, B, T, L, H, kv_heads, grp.col("head_dim"), dtype, kv_dtype,
                        window, sm_count, grp.optional("kv_splits", 0.0),
                        flag(grp, "kv_write"))  # fmt: skip


def _quant(grp: Group) -> str | None:
    """The optional `quant` column: the engine's kernel family (model/specs/quant.py)."""
    label = grp.variant("quant", None)
    if label is None:
        return None
    if str(label) not in FAMILIES:
        raise RooflensError(f"quant '{label}' is not a kernel family: use one of "
                            f"{', '.join(FAMILIES)}")  # fmt: skip
    return str(label)


def _group_op(grp: Group, group_size: int, sm_count: int) -> Op:
    """The Op of a group of rows (`grp.extra`: the weight or KV dtype, or the norm type)."""
    op_name, dtype, col = grp.op, grp.dtype, grp.col
    if op_name == "gemm":
        return gemm_op("gemm", "kernel", 1, col("m"), col("n"), col("k"), grp.extra, dtype,
                       group_size, heads=int(grp.variant("heads", 1)),
                       quant=_quant(grp))  # fmt: skip
    if op_name in SECOND_DTYPE and op_name != "moe":
        return _attention(grp, sm_count)
    if op_name == "moe":  # model/ops/moe.py: this GPU's experts and its slice of their width
        inter, experts, topk = col("inter_size"), col("num_experts"), col("topk")
        tp, ep = col("moe_tp_size"), col("moe_ep_size")
        check_moe_layout(inter, experts, topk, tp, ep, "op moe")
        return moe_op("kernel", 1, col("num_tokens"), col("hidden_size"), inter / tp, topk,
                      experts, ep, grp.extra, dtype, group_size,
                      gated=bool(int(grp.variant("gated", 1))),
                      assignments=at_most(grp, "assignments", col("num_tokens") * topk,
                                          "num_tokens × topk token-expert pairs"),
                      experts_read=at_most(grp, "experts_read", experts / ep,
                                           "experts on this GPU (num_experts / moe_ep_size)"),
                      quant=_quant(grp))  # fmt: skip
    if op_name == "norm":
        residual = grp.optional("residual", 0.0) if "residual" in grp.g.columns else 0.0
        return norm_op("norm", "kernel", 1, col("rows"), col("hidden"), dtype, residual, grp.extra,
                       flag(grp, "eager"))  # fmt: skip
    if op_name == "elementwise":
        return elementwise_op("elementwise", "kernel", 1, col("elements_read"),
                              col("elements_written"), dtype,
                              float(grp.variant("flops_per_element", 1.0)),
                              flag(grp, "eager"))  # fmt: skip
    if op_name == "embedding":
        return embedding_op("embed", "kernel", 1, col("rows"), col("hidden"), dtype,
                            flag(grp, "eager"))  # fmt: skip
    if op_name == "comm":
        shape = {"n_gpus": int(grp.variant("n_gpus", 1))}
        if "span_gpus" in grp.g.columns:
            shape["span_gpus"] = int(grp.variant("span_gpus", shape["n_gpus"]))
        if bool(grp.variant("hierarchical", False)):
            shape["hierarchical"] = True
        return comm_op("comm", "kernel", 1, str(grp.extra), col("comm_bytes"), **shape)
    raise RooflensError(f"unknown op '{op_name}'; use one of {', '.join(REQUIRED)}")


def _spelling(column: pd.Series) -> np.ndarray:
    """A group key per row that tells apart the values of a variant column as their text does
    (`str(value)`: an empty cell is 'nan'), as integer codes: the text of each distinct value is
    made once, not per row of a table of millions."""
    codes, distinct = pd.factorize(column, use_na_sentinel=False)
    _, label = np.unique(np.array([str(v) for v in distinct], dtype=object), return_inverse=True)
    return label[codes]


def batches(table: pd.DataFrame, gpu: GPUSpec, internal: bool = False) -> list[Batch]:
    """Group a kernel table into array-shaped Ops for `gpu` (positions refer to `table`'s row
    order). Attention rows with one new token per sequence form their own groups: pricing
    gives them the decode terms (model/pricing/kinds.py kind_terms), as it would row by row.
    `internal`: the rows are the operator table's own calls, not a user's (no int32 limits)."""
    if "op" not in table.columns:
        raise RooflensError("input needs an 'op' column (gemm, attention_prefill, ...)")
    frame = table.reset_index(drop=True)
    ops = frame["op"].astype(str).str.strip()
    unknown = sorted(set(ops.unique()) - set(REQUIRED))
    if unknown:
        raise RooflensError(f"unknown op '{unknown[0]}'; use one of {', '.join(REQUIRED)}")
    for op_name in ops.unique():
        # kv_dtype may be left out (the KV cache then has the activations' dtype)
        missing = [c for c in REQUIRED[op_name] if c not in frame.columns and c != "kv_dtype"]
        if missing:
            raise RooflensError(f"op {op_name} needs columns {', '.join(missing)}")
    comm = ops == "comm"
    dtype = pd.Series("fp32", index=frame.index, dtype=object)
    if (~comm).any():
        dtype[~comm] = dtype_column(frame[~comm], "dtype")
    extra = pd.Series("", index=frame.index, dtype=object)
    for op_name, column in SECOND_DTYPE.items():
        rows = ops == op_name
        if rows.any():
            extra[rows] = dtype_column(frame[rows], column, dtype[rows])
    if "norm" in frame.columns:
        extra[ops == "norm"] = frame.loc[ops == "norm", "norm"].fillna("rmsnorm").astype(str)
    extra[ops == "norm"] = extra[ops == "norm"].replace("", "rmsnorm")
    if comm.any():
        extra[comm] = frame.loc[comm, "collective"].astype(str)
    group_size = group_sizes(frame)
    one_token = pd.Series(False, index=frame.index)
    if "seq_len" in frame.columns:
        tokens = frame["new_tokens"] if "new_tokens" in frame.columns else frame["seq_len"]
        one_token = ops.isin(("attention_prefill",)) & pd.to_numeric(tokens, "coerce").eq(1)
    variants = [_spelling(frame[c]) for c in VARIANT_COLUMNS if c in frame.columns]
    keys = [ops, dtype, extra, group_size, one_token, *variants]
    out = []
    key: Any
    for key, positions in frame.groupby(keys, sort=False, dropna=False).indices.items():
        view = Rows(frame, np.asarray(positions))
        grp = Group(view, str(key[0]), str(key[1]), str(key[2]), internal)
        op = replayed(_group_op(grp, int(key[3]), gpu.sm_count), grp.optional(REPLAY_COPIES))
        out.append(Batch(op, grp.g.index.to_numpy()))
    return out


def predict_frame(
    table: pd.DataFrame,
    gpu: GPUSpec,
    profile: str | Profile = "ideal",
    detail: bool = False,
    system: SystemSpec | None = None,
    internal: bool = False,
) -> pd.DataFrame:
    """`table` plus flops, bytes, predicted_s and bound; `detail` adds compute_dtype,
    compute_s and memory_s (the roofs, per call). `system` prices `comm` rows (default: the
    GPU's default node). `internal`: rows the operator table built (`batches`)."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile, gpu)
    system = system or default_system(gpu)
    n = len(table)
    flops, nbytes, time_s = np.zeros(n), np.zeros(n), np.zeros(n)
    bound, dtypes = np.empty(n, dtype=object), np.empty(n, dtype=object)
    compute_s, memory_s = np.zeros(n), np.zeros(n)
    for b in batches(table, gpu, internal):
        priced = price_op(b.op, system, prof)
        flops[b.index] = np.broadcast_to(b.op.flops, b.index.shape)
        nbytes[b.index] = np.broadcast_to(b.op.bytes, b.index.shape)
        time_s[b.index] = np.broadcast_to(priced.time_s, b.index.shape)
        compute_bound = np.asarray(priced.compute_s) >= np.asarray(priced.memory_s)
        kind = np.where(compute_bound, "compute", "memory")
        bound[b.index] = "comm" if b.op.kind == "comm" else kind
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


def predict_kernels(
    table: pd.DataFrame, gpu: GPUSpec, profile: str | Profile = "ideal"
) -> pd.DataFrame:
    """`rooflens kernels predict`: every input column unchanged plus flops, bytes, predicted_s
    and bound (DESIGN.md)."""
    return predict_frame(table, gpu, profile)
