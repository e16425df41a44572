"""The columns of a kernel table (`rooflens kernels predict`, the validator's measured tables):
which columns each op needs, the dtype names and aliases accepted, and the readers that turn a
group of rows into checked float arrays with one-line errors naming the row. Grouping the rows
into Ops and pricing them is model/pricing/kernel_table.py.

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
  where the routing is known; else uniform, model/ops/moe.py);
- `norm`: rows, hidden, dtype (+ residual 0/1, norm rmsnorm/layernorm); `elementwise`:
  elements_read, elements_written, dtype (+ flops_per_element, default 1); `embedding`: rows,
  hidden, dtype; `comm`: collective, comm_bytes, n_gpus (+ span_gpus, hierarchical), priced on
  the system given (default: the GPU's default node, model/pricing/comm.py).
Any op of a benchmark's table may state `replay_copies`: the copies of what each replay re-reads
(a GEMM's weights, attention's KV cache) that it cycles through (model/pricing/l2_resident.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from rooflens.hardware.errors import RooflensError
from rooflens.model.ops.op import Num
from rooflens.model.specs.dtypes import STORAGE_DTYPES

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
# The largest size a kernel indexes (int32): in a user's table (`kernels predict`, a measured
# table) anything larger is a typing slip, and would overflow the counts into inf. Rows the
# operator table builds (a whole step's elements, bytes) pass 2³¹ routinely and are never held to
# it (`Group(..., internal=True)`, model/pricing/reprice.py).
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
                   "hierarchical", "eager", "kv_write", "quant")  # fmt: skip


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


def distinct_text(values: pd.Series) -> set[str]:
    """The distinct values of a column as text (each once, not once a row)."""
    return set(map(str, pd.unique(values)))


def map_distinct(values: pd.Series, fn: Callable[[Any], Any] | Mapping[Any, Any]) -> pd.Series:
    """`values.map(fn)`, with `fn` called once per distinct value: a kernel table holds
    millions of rows and a few dozen distinct devices, dtypes or labels."""
    codes, distinct = pd.factorize(values, use_na_sentinel=False)
    mapped = pd.Series(distinct).map(fn)
    out = mapped.take(codes).set_axis(values.index)
    out.name = values.name
    return out


def filled(raw: pd.Series) -> pd.Series:
    """The cells a row fills: not missing and, in a text column, not blank. A numeric column is
    never blank, so it is not turned into text (a validator table holds millions of rows); a
    text column is checked once per distinct value."""
    present = raw.notna()
    if pd.api.types.is_numeric_dtype(raw.dtype):
        return present
    distinct = pd.unique(raw[present])
    blank = [v for v in distinct if str(v).strip() == ""]
    return present & ~raw.isin(blank) if blank else present


class Rows:
    """Some rows of a table, as a Group reads them (`columns`, `index`, a column by name): a
    column is cut to the rows when it is read, so grouping a table of millions of rows does not
    copy every column of every group (the measured tables' text columns most of all)."""

    def __init__(self, frame: pd.DataFrame, positions: np.ndarray):
        self.frame, self.positions = frame, positions
        self.columns, self.index = frame.columns, frame.index[positions]

    def __getitem__(self, name: str) -> pd.Series:
        return self.frame[name].iloc[self.positions]


class Group:
    """The rows of one op and variant, read column by column with one-line errors."""

    def __init__(
        self, g: pd.DataFrame | Rows, op_name: str, dtype: str, extra: str, internal: bool = False
    ):
        self.g, self.op, self.dtype, self.extra = g, op_name, dtype, extra
        # internal rows (the operator table's own calls) keep the positivity and finiteness
        # checks but not a user's int32 limit
        self.max_size = np.inf if internal else MAX_SIZE

    def col(self, name: str) -> Any:  # float64 array (head counts etc. broadcast as ints)
        """A required size column: positive and at most `max_size` (a mean decode step's call may
        hold a fractional length, so whole numbers are not required)."""
        if name not in self.g.columns:
            raise RooflensError(f"op {self.op} needs a '{name}' column")
        values = pd.to_numeric(self.g[name], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values) | (values <= 0) | (values > self.max_size)
        if bad.any():
            first = int(np.argmax(bad))
            raise RooflensError(f"row {self.g.index[first]}: {name} must be a positive number "
                                f"≤ {self.max_size:,} for op {self.op}, "
                                f"got '{self.g[name].iloc[first]}'")  # fmt: skip
        return values

    def optional(self, name: str, default: Num | None = None) -> Any:
        """An optional numeric column: NaN where a row leaves it empty (or `default` there)."""
        if name not in self.g.columns:
            return default
        raw = self.g[name]
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
        given = filled(raw).to_numpy()
        low = values < 0 if name == "residual" else values <= 0
        bad = given & (~np.isfinite(values) | low | (values > self.max_size))
        if bad.any():
            first = int(np.argmax(bad))
            raise RooflensError(f"row {self.g.index[first]}: {name} must be a positive number "
                                f"for op {self.op}, got '{raw.iloc[first]}'")  # fmt: skip
        return values if default is None else np.where(np.isnan(values), default, values)

    def variant(self, name: str, default: Any) -> Any:
        value = self.g[name].iloc[0] if name in self.g.columns else None
        return default if value is None or pd.isna(value) or value == "" else value


def flag(grp: Group, name: str) -> bool:
    """An optional 0/1 column: `eager` (PyTorch's own unfused kernel, model/ops/op.py memory_op),
    `kv_write` (an engine's separate KV-cache write kernel, model/ops/attention.py)."""
    return str(grp.variant(name, "0")).strip().lower() in ("1", "1.0", "true", "yes")


def at_most(grp: Group, name: str, limit: Any, what: str) -> Any:
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


def group_sizes(frame: pd.DataFrame) -> pd.Series:
    """Weights per quantization scale: whole numbers in 1..MAX_SIZE, 128 where empty."""
    if "group_size" not in frame.columns:
        return pd.Series(128, index=frame.index)
    raw = frame["group_size"]
    values = pd.to_numeric(raw, errors="coerce")
    given = filled(raw)
    finite = values.where(np.isfinite(values.astype(float)))
    bad = given & ~(finite.between(1, MAX_SIZE) & (finite == finite.round()))
    if bad.any():
        first = int(np.argmax(bad.to_numpy()))
        raise RooflensError(f"row {bad.index[first]}: group_size must be a whole number in "
                            f"1..{MAX_SIZE:,}, got '{raw.iloc[first]}'")  # fmt: skip
    return values.where(given, 128).astype(int)


def dtype_column(frame: pd.DataFrame, name: str, fallback: pd.Series | None = None) -> pd.Series:
    """Normalised dtype names of a column; empty cells (or a missing column) take `fallback`."""
    if name not in frame.columns:
        if fallback is None:
            raise RooflensError(f"op {frame['op'].iloc[0]} needs a '{name}' column")
        return fallback
    values = frame[name]
    given = filled(values)
    kept = values[given]
    names = {}  # each distinct spelling once: a validator table holds millions of rows
    for value in pd.unique(kept):
        try:
            names[value] = normalize_dtype(value, name, 0)
        except RooflensError:  # the error names the first row that spells it
            normalize_dtype(value, name, int(str(kept.index[(kept == value).to_numpy()][0])))
    out = values.where(~given, map_distinct(kept, names).astype(object))
    if fallback is not None:
        out = out.where(given, fallback)
    return out
