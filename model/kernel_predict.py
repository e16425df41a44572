"""Kernel-table prediction with the CSV contract of DESIGN.md (`rooflens kernels predict`), and
the validator's and calibration's pricing of measured tables: the one kernel-table predictor.

Rows of one op and variant become one `Op` whose shapes are numpy arrays, built by the same
constructors the operator table uses (model/op.py, model/attention.py, model/mla.py,
model/moe.py, with the GPU's SM count for attention's grid) and priced by
model/pricing.py's `price_op`. So any row of the operator table re-prices from its call
(`Op.call`) to the same seconds, and a measured kernel table joins with predictions on
identical keys. A measurement table has 10⁵ rows, priced thousands of times by calibration:
one `price_op` call per group of rows, not per row.

Ops (DESIGN.md's contract, then its extensions):
- `gemm`: m, n, k, dtype (+ weight_dtype, group_size; heads for a batched per-head GEMM);
- `attention_prefill`: batch, seq_len, n_heads, n_kv_heads, head_dim, dtype, kv_dtype
  (+ new_tokens < seq_len for chunked prefill or verification, window, kv_splits);
- `attention_decode`: batch, kv_len, n_heads, n_kv_heads, head_dim, dtype, kv_dtype
  (+ window, kv_splits);
- `mla_decode` (absorbed latent attention): batch, kv_len, n_heads, kv_lora_rank, rope_dim,
  dtype, kv_dtype (+ new_tokens, window); `mla_prefill` (decompressed): batch, seq_len, n_heads,
  qk_head_dim, v_head_dim, kv_lora_rank, rope_dim, dtype, kv_dtype (+ new_tokens, window);
- `moe`: one fused MoE layer's routed experts on one GPU (vLLM fused_moe): num_tokens routed
  top-`topk` over `num_experts`, num_experts / moe_ep_size of them here, each inter_size /
  moe_tp_size wide (+ weight_dtype, group_size, gated, and `assignments` / `experts_read`
  where the routing is known; else uniform, model/moe.py);
- `norm`: rows, hidden, dtype (+ residual 0/1, norm rmsnorm/layernorm); `elementwise`:
  elements_read, elements_written, dtype (+ flops_per_element, default 1); `embedding`: rows,
  hidden, dtype; `comm`: collective, comm_bytes, n_gpus (+ span_gpus, hierarchical), priced on
  the system given (default: the GPU's default node, model/comm.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from hardware.errors import RooflensError
from hardware.presets import default_system
from hardware.profiles import Profile, get_profile
from hardware.spec import GPUSpec, SystemSpec
from model.attention import attention_op
from model.dtypes import STORAGE_DTYPES
from model.mla import mla_decode_op, mla_prefill_op
from model.moe import moe_op
from model.op import Num, Op, comm_op, elementwise_op, embedding_op, gemm_op, norm_op
from model.pricing import price_op

REQUIRED: dict[str, tuple[str, ...]] = {
    "gemm": ("m", "n", "k", "dtype"),
    "attention_prefill": (
        "batch", "seq_len", "n_heads", "n_kv_heads", "head_dim", "dtype", "kv_dtype",
    ),
    "attention_decode": (
        "batch", "kv_len", "n_heads", "n_kv_heads", "head_dim", "dtype", "kv_dtype",
    ),
    "mla_prefill": ("batch", "seq_len", "n_heads", "qk_head_dim", "v_head_dim", "kv_lora_rank",
                    "rope_dim", "dtype", "kv_dtype"),
    "mla_decode": ("batch", "kv_len", "n_heads", "kv_lora_rank", "rope_dim", "dtype", "kv_dtype"),
    "moe": (
        "num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
        "moe_ep_size", "dtype",
    ),
    "norm": ("rows", "hidden", "dtype"),
    "elementwise": ("elements_read", "elements_written", "dtype"),
    "embedding": ("rows", "hidden", "dtype"),
    "comm": ("collective", "comm_bytes", "n_gpus"),
}  # fmt: skip
OUTPUT_COLUMNS = ("flops", "bytes", "predicted_s", "bound")
# The largest size a kernel indexes (int32): anything larger is a typing slip, and would
# overflow the counts into inf.
MAX_SIZE = 2**31 - 1
DTYPE_ALIASES = {
    "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32", "float": "fp32",
    "float8": "fp8", "fp8_e4m3": "fp8", "float8_e4m3fn": "fp8", "e4m3": "fp8",
}  # fmt: skip
ATTENTION_OPS = ("attention_prefill", "attention_decode")
# Ops with an optional second dtype column: weight-only quantization, or the KV cache's.
SECOND_DTYPE = {"gemm": "weight_dtype", "moe": "weight_dtype", "attention_prefill": "kv_dtype",
                "attention_decode": "kv_dtype", "mla_prefill": "kv_dtype",
                "mla_decode": "kv_dtype"}  # fmt: skip
# Columns whose value selects a code path (not an array-able number): one group per value.
VARIANT_COLUMNS = ("norm", "collective", "heads", "window", "gated", "n_gpus", "span_gpus",
                   "flops_per_element",
                   "hierarchical", "eager", "kv_write")  # fmt: skip


def normalize_dtype(value: object, column: str, row: int) -> str:
    text = str(value).strip().lower()
    text = DTYPE_ALIASES.get(text, text)
    if text not in STORAGE_DTYPES:
        raise RooflensError(
            f"row {row}: {column}='{value}' is not a dtype; use one of {', '.join(STORAGE_DTYPES)}"
        )
    return text


def check_moe_layout(inter: Num, experts: Num, topk: Num, tp: Num, ep: Num, where: str) -> None:
    """moe_tp_size must divide inter_size, moe_ep_size num_experts, and topk ≤ num_experts."""
    if np.any(np.mod(inter, tp) != 0):
        raise RooflensError(f"{where}: moe_tp_size must divide inter_size")
    if np.any(np.mod(experts, ep) != 0):
        raise RooflensError(f"{where}: moe_ep_size must divide num_experts")
    if np.any(np.asarray(topk) > np.asarray(experts)):
        raise RooflensError(f"{where}: topk must not exceed num_experts")


@dataclass(frozen=True)
class Batch:
    """One Op holding many rows (array shapes) and the row positions it covers."""

    op: Op
    index: np.ndarray


class _Group:
    """The rows of one op and variant, read column by column with one-line errors."""

    def __init__(self, g: pd.DataFrame, op_name: str, dtype: str, extra: str):
        self.g, self.op, self.dtype, self.extra = g, op_name, dtype, extra

    def col(self, name: str) -> Any:  # float64 array (head counts etc. broadcast as ints)
        """A required size column: positive and at most MAX_SIZE (a mean decode step's call may
        hold a fractional length, so whole numbers are not required)."""
        if name not in self.g.columns:
            raise RooflensError(f"op {self.op} needs a '{name}' column")
        values = pd.to_numeric(self.g[name], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values) | (values <= 0) | (values > MAX_SIZE)
        if bad.any():
            first = int(np.argmax(bad))
            raise RooflensError(f"row {self.g.index[first]}: {name} must be a positive number "
                                f"≤ {MAX_SIZE:,} for op {self.op}, "
                                f"got {self.g[name].iloc[first]!r}")  # fmt: skip
        return values

    def optional(self, name: str, default: Num | None = None) -> Any:
        """An optional numeric column: NaN where a row leaves it empty (or `default` there)."""
        if name not in self.g.columns:
            return default
        raw = self.g[name]
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
        given = raw.notna().to_numpy() & (raw.astype(str).str.strip() != "").to_numpy()
        low = values < 0 if name == "residual" else values <= 0
        bad = given & (~np.isfinite(values) | low | (values > MAX_SIZE))
        if bad.any():
            first = int(np.argmax(bad))
            raise RooflensError(f"row {self.g.index[first]}: {name} must be a positive number "
                                f"for op {self.op}, got {raw.iloc[first]!r}")  # fmt: skip
        return values if default is None else np.where(np.isnan(values), default, values)

    def variant(self, name: str, default: Any) -> Any:
        value = self.g[name].iloc[0] if name in self.g.columns else None
        return default if value is None or pd.isna(value) or value == "" else value


def _attention(grp: _Group, sm_count: int) -> Op:
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
                        _flag(grp, "kv_write"))  # fmt: skip


def _group_op(grp: _Group, group_size: int, sm_count: int) -> Op:
    """The Op of a group of rows (`grp.extra`: the weight or KV dtype, or the norm type)."""
    op_name, dtype, col = grp.op, grp.dtype, grp.col
    if op_name == "gemm":
        return gemm_op("gemm", "kernel", 1, col("m"), col("n"), col("k"), grp.extra, dtype,
                       group_size, heads=int(grp.variant("heads", 1)))  # fmt: skip
    if op_name in SECOND_DTYPE and op_name != "moe":
        return _attention(grp, sm_count)
    if op_name == "moe":  # model/moe.py: this GPU's experts and its slice of their width
        inter, experts, topk = col("inter_size"), col("num_experts"), col("topk")
        tp, ep = col("moe_tp_size"), col("moe_ep_size")
        check_moe_layout(inter, experts, topk, tp, ep, "op moe")
        return moe_op("kernel", 1, col("num_tokens"), col("hidden_size"), inter / tp, topk,
                      experts, ep, grp.extra, dtype, group_size,
                      gated=bool(int(grp.variant("gated", 1))),
                      assignments=_at_most(grp, "assignments", col("num_tokens") * topk,
                                           "num_tokens × topk token-expert pairs"),
                      experts_read=_at_most(grp, "experts_read", experts / ep,
                                            "experts on this GPU (num_experts / moe_ep_size)"),
                      )  # fmt: skip
    if op_name == "norm":
        residual = grp.optional("residual", 0.0) if "residual" in grp.g.columns else 0.0
        return norm_op("norm", "kernel", 1, col("rows"), col("hidden"), dtype, residual, grp.extra,
                       _flag(grp, "eager"))  # fmt: skip
    if op_name == "elementwise":
        return elementwise_op("elementwise", "kernel", 1, col("elements_read"),
                              col("elements_written"), dtype,
                              float(grp.variant("flops_per_element", 1.0)),
                              _flag(grp, "eager"))  # fmt: skip
    if op_name == "embedding":
        return embedding_op("embed", "kernel", 1, col("rows"), col("hidden"), dtype,
                            _flag(grp, "eager"))  # fmt: skip
    if op_name == "comm":
        shape = {"n_gpus": int(grp.variant("n_gpus", 1))}
        if "span_gpus" in grp.g.columns:
            shape["span_gpus"] = int(grp.variant("span_gpus", shape["n_gpus"]))
        if bool(grp.variant("hierarchical", False)):
            shape["hierarchical"] = True
        return comm_op("comm", "kernel", 1, str(grp.extra), col("comm_bytes"), **shape)
    raise RooflensError(f"unknown op '{op_name}'; use one of {', '.join(REQUIRED)}")


def _flag(grp: _Group, name: str) -> bool:
    """An optional 0/1 column: `eager` (PyTorch's own unfused kernel, model/op.py memory_op),
    `kv_write` (an engine's separate KV-cache write kernel, model/attention.py)."""
    return str(grp.variant(name, "0")).strip().lower() in ("1", "1.0", "true", "yes")


def _at_most(grp: _Group, name: str, limit: Any, what: str) -> Any:
    """An optional MoE count that cannot exceed `limit` (e.g. experts_read ≤ the experts here)."""
    values = grp.optional(name)
    if values is None:
        return None
    over = np.isfinite(values) & (values > limit)
    if over.any():
        first = int(np.argmax(over))
        raise RooflensError(f"row {grp.g.index[first]}: {name}={values[first]:g} exceeds the "
                            f"{np.broadcast_to(limit, values.shape)[first]:g} {what}")  # fmt: skip
    return values


def _group_sizes(frame: pd.DataFrame) -> pd.Series:
    """Weights per quantization scale: whole numbers in 1..MAX_SIZE, 128 where empty."""
    if "group_size" not in frame.columns:
        return pd.Series(128, index=frame.index)
    raw = frame["group_size"]
    values = pd.to_numeric(raw, errors="coerce")
    given = raw.notna() & (raw.astype(str).str.strip() != "")
    finite = values.where(np.isfinite(values.astype(float)))
    bad = given & ~(finite.between(1, MAX_SIZE) & (finite == finite.round()))
    if bad.any():
        first = int(np.argmax(bad.to_numpy()))
        raise RooflensError(f"row {bad.index[first]}: group_size must be a whole number in "
                            f"1..{MAX_SIZE:,}, got {raw.iloc[first]!r}")  # fmt: skip
    return values.where(given, 128).astype(int)


def _dtype(frame: pd.DataFrame, name: str, fallback: pd.Series | None = None) -> pd.Series:
    """Normalised dtype names of a column; empty cells (or a missing column) take `fallback`."""
    if name not in frame.columns:
        if fallback is None:
            raise RooflensError(f"op {frame['op'].iloc[0]} needs a '{name}' column")
        return fallback
    values = frame[name]
    given = values.notna() & (values.astype(str).str.strip() != "")
    named = {i: normalize_dtype(v, name, int(str(i))) for i, v in values[given].items()}
    out = values.where(~given, pd.Series(named, index=values.index, dtype=object))
    if fallback is not None:
        out = out.where(given, fallback)
    return out


def batches(table: pd.DataFrame, gpu: GPUSpec) -> list[Batch]:
    """Group a kernel table into array-shaped Ops for `gpu` (positions refer to `table`'s row
    order). Attention rows with one new token per sequence form their own groups: pricing
    gives them the decode terms (model/pricing.py kind_terms), as it would row by row."""
    if "op" not in table.columns:
        raise RooflensError("input needs an 'op' column (gemm, attention_prefill, ...)")
    frame = table.reset_index(drop=True)
    ops = frame["op"].astype(str).str.strip()
    unknown = sorted(set(ops) - set(REQUIRED))
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
        dtype[~comm] = _dtype(frame[~comm], "dtype")
    extra = pd.Series("", index=frame.index, dtype=object)
    for op_name, column in SECOND_DTYPE.items():
        rows = ops == op_name
        if rows.any():
            extra[rows] = _dtype(frame[rows], column, dtype[rows])
    if "norm" in frame.columns:
        extra[ops == "norm"] = frame.loc[ops == "norm", "norm"].fillna("rmsnorm").astype(str)
    extra[ops == "norm"] = extra[ops == "norm"].replace("", "rmsnorm")
    if comm.any():
        extra[comm] = frame.loc[comm, "collective"].astype(str)
    group_size = _group_sizes(frame)
    one_token = pd.Series(False, index=frame.index)
    if "seq_len" in frame.columns:
        tokens = frame["new_tokens"] if "new_tokens" in frame.columns else frame["seq_len"]
        one_token = ops.isin(("attention_prefill",)) & pd.to_numeric(tokens, "coerce").eq(1)
    variants = [frame[c].astype(str) for c in VARIANT_COLUMNS if c in frame.columns]
    keys = [ops, dtype, extra, group_size, one_token, *variants]
    out = []
    key: Any
    for key, g in frame.groupby(keys, sort=False, dropna=False):
        grp = _Group(g, str(key[0]), str(key[1]), str(key[2]))
        out.append(Batch(_group_op(grp, int(key[3]), gpu.sm_count), g.index.to_numpy()))
    return out


def predict_frame(
    table: pd.DataFrame,
    gpu: GPUSpec,
    profile: str | Profile = "ideal",
    detail: bool = False,
    system: SystemSpec | None = None,
) -> pd.DataFrame:
    """`table` plus flops, bytes, predicted_s and bound; `detail` adds compute_dtype,
    compute_s and memory_s (the roofs, per call). `system` prices `comm` rows (default: the
    GPU's default node)."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile, gpu)
    system = system or default_system(gpu)
    n = len(table)
    flops, nbytes, time_s = np.zeros(n), np.zeros(n), np.zeros(n)
    bound, dtypes = np.empty(n, dtype=object), np.empty(n, dtype=object)
    compute_s, memory_s = np.zeros(n), np.zeros(n)
    for b in batches(table, gpu):
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


def predict_kernels(table: pd.DataFrame, gpu: GPUSpec, profile: str = "ideal") -> pd.DataFrame:
    """`rooflens kernels predict`: every input column unchanged plus flops, bytes, predicted_s
    and bound (DESIGN.md)."""
    return predict_frame(table, gpu, profile)
