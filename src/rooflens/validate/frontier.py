"""The best available implementation at each shape: the per-shape minimum over implementations.

Engines ship different kernels for the same operator. On the A100 the two engines of the shared
attention tables differ by ~1.4x at large KV (vLLM's flash-attn decode streams the cache at
~1.41 TB/s median for KV >= 256 MB, SGLang's at ~1.01 TB/s), while in prefill SGLang is the
faster one at most shapes. A profile fitted between them describes neither; production engines
(TensorRT-LLM, vLLM, SGLang) each pick their fastest kernel per shape, and the held-out
end-to-end measurements the model is judged on are runs of such engines. So the calibrated
attention terms are fitted on the *frontier*: for every shape key (GPU, op and the contract's
shape columns) measured by at least two implementations, the fastest implementation's time.

Keys measured by one implementation only, on a GPU and op where implementations compete, are
left out of the frontier (counted in `frontier_stats`): a time nobody competed on is not known
to be the best available one (on the A100, SGLang alone measured MHA shapes with more than
8 KV heads). A GPU and op with a single implementation (e.g. one engine's table) pass through
unchanged. Within one implementation, repeated measurements of a key take their median first.

One engine's own attention terms (hardware/profiles.py `engines`) are fitted on its default
kernel instead (`default_kernel`): what that engine runs, not the best of its backends.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from rooflens.model.pricing.kernel_columns import ATTENTION_OPS, REQUIRED
from rooflens.model.pricing.l2_resident import REPLAY_COPIES

# Optional contract columns that change what a row computes (they are part of its key).
OPTIONAL_KEYS = ("weight_dtype", "group_size", "quant", "kv_write", "eager", "window")
BEST_IMPL = "best-of-impls"
# Columns that say how a row was measured, not what it computes: a frontier row takes its
# winner's (the copies its harness replayed, model/pricing/l2_resident.py).
CARRIED = (REPLAY_COPIES,)


def shape_keys(table: pd.DataFrame, op: str) -> list[str]:
    """The columns that identify one measured shape of `op` (gpu, op, contract columns)."""
    keys = ["gpu", "op", *REQUIRED.get(op, ())]
    keys += [c for c in OPTIONAL_KEYS if c in table.columns and table[c].notna().any()]
    return [c for c in keys if c in table.columns]


def _frontier_of(rows: pd.DataFrame, keys: list[str]) -> tuple[pd.DataFrame, dict[str, object]]:
    """Rows of one GPU and op measured by >= 2 implementations -> one row per shared key, with
    the winner's measurement and how its harness ran it (CARRIED)."""
    how = {"measured_s": "median", **{c: "first" for c in CARRIED if c in rows.columns}}
    per_impl = rows.groupby([*keys, "impl"], sort=False, dropna=False).agg(how).reset_index()
    n_impls = per_impl.groupby(keys, sort=False, dropna=False)["impl"].transform("nunique")
    shared = per_impl[n_impls >= 2]
    best = shared.loc[shared.groupby(keys, sort=False, dropna=False)["measured_s"].idxmin()]
    best = best.rename(columns={"impl": "best_impl"}).assign(impl=BEST_IMPL, source="frontier")
    stats = {
        "keys": int(per_impl[keys].drop_duplicates().shape[0]),
        "keys_shared": len(best),
        "won_by": {str(k): int(v) for k, v in best["best_impl"].value_counts().items()},
    }
    return best.reset_index(drop=True), stats


def best_of_impls(
    table: pd.DataFrame, ops: Sequence[str] = ATTENTION_OPS
) -> tuple[pd.DataFrame, dict[str, dict[str, object]]]:
    """`table` with the rows of `ops` replaced by their frontier wherever a GPU's op was
    measured by two or more implementations; other rows unchanged. Frontier rows carry
    impl 'best-of-impls' and `best_impl` (the winner). Returns (table, stats per gpu/op)."""
    if table.empty or "impl" not in table.columns:
        return table, {}
    parts, stats = [], {}
    replaced = pd.Series(False, index=table.index)
    for (gpu, op), rows in table[table["op"].isin(ops)].groupby(["gpu", "op"], sort=True):
        if rows["impl"].nunique() < 2:
            continue
        frontier, stats[f"{gpu}/{op}"] = _frontier_of(rows, shape_keys(rows, str(op)))
        parts.append(frontier)
        replaced[rows.index] = True
    if not parts:
        return table, stats
    return pd.concat([table[~replaced], *parts], ignore_index=True), stats


def most_measured(impl: pd.Series) -> str:
    """The implementation with the most rows (the newest name on a tie)."""
    return _top(impl.astype(str).value_counts())


def _top(counts: pd.Series) -> str:
    return str(counts.sort_index(ascending=False).idxmax())


def default_kernel(
    table: pd.DataFrame, ops: Sequence[str] = ATTENTION_OPS
) -> tuple[pd.DataFrame, dict[str, dict[str, object]]]:
    """One engine's rows of `ops` cut to its default kernel per GPU and op: the implementation
    that measured the most of them (aiconfigurator's collectors sweep an engine's default
    backend widest: FA3 for vLLM and SGLang on the H100, TensorRT-LLM's own `torch_flow`).
    An engine's attention terms describe the kernel it runs, not the fastest of its backends:
    SGLang's are a server flag, and their frontier (shapes two of them share) left the B300's
    TensorRT-LLM, whose two backends share none, with no rows, so its attention was priced
    with the fastest kernel of any engine, 30 % faster than its own. Other rows unchanged."""
    if table.empty or "impl" not in table.columns:
        return table, {}
    keep = pd.Series(True, index=table.index)
    stats: dict[str, dict[str, object]] = {}
    for (gpu, op), rows in table[table["op"].isin(ops)].groupby(["gpu", "op"], sort=True):
        counts = rows["impl"].astype(str).value_counts()
        kernel = _top(counts)
        keep[rows.index] = rows["impl"].astype(str).eq(kernel)
        stats[f"{gpu}/{op}"] = {"kernel": kernel, "rows": int(counts[kernel]),
                                "left_out": int(counts.sum() - counts[kernel])}  # fmt: skip
    return table[keep], stats
