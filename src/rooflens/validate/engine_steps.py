"""A step's GEMMs and all-reduces by the engines' own measured kernels: a second route to the
whole-step price (`python -m benchmarks.engine_steps`).

aiconfigurator (NVIDIA) prices a step by looking each operator up in its engine's tables of
measured kernels. This module does the same for the operator table's dense GEMMs and tensor-
parallel all-reduces: each row's call is read off the engine's table on that GPU (the shared
measurements, validate/aiconfigurator.py), interpolated linearly in log time over log m, log n
and log k between the table's grid points, never extrapolated, and the step's sum is set beside
the calibrated price of the same rows. A row outside a table's grid (an `lm_head` wider than
65,536) or of a precision the engine did not measure is left out of both sums and counted.

On a measured GPU this is in sample (the calibration was fitted on these tables), so it tells
what the per-call errors add up to over a real step, per precision and tensor-parallel degree;
it says nothing about a GPU nobody measured (`rooflens validate cv` does).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rooflens.model.pricing.comm import CUSTOM_ALLREDUCE_MAX_BYTES
from rooflens.validate.aiconfigurator import load_aiconfigurator_gemm
from rooflens.validate.custom_ar_fit import load_custom_allreduce
from rooflens.validate.fit_terms import engine_of
from rooflens.validate.measured_files import DEFAULT_ROOT

AXES = ("m", "n", "k")


@dataclass(frozen=True)
class GemmTable:
    """One engine's GEMM latencies of one precision on one GPU, on its (m, n, k) grid."""

    impl: str
    axes: tuple[np.ndarray, np.ndarray, np.ndarray]  # log of each axis's grid points
    log_s: np.ndarray  # log seconds, NaN where the grid has no row

    @classmethod
    def of(cls, rows: pd.DataFrame) -> GemmTable:
        cube = rows.groupby(list(AXES))["measured_s"].median()
        grid = [np.sort(rows[a].unique().astype(float)) for a in AXES]
        full = pd.MultiIndex.from_product(grid, names=list(AXES))
        values = cube.reindex(full).to_numpy(float).reshape([len(g) for g in grid])
        return cls(str(rows["impl"].iloc[0]), tuple(np.log(g) for g in grid), np.log(values))  # type: ignore[arg-type]

    def at(self, m: float, n: float, k: float) -> float:
        """Seconds of the call, trilinear in log space; NaN outside the grid or next to a hole."""
        lo, w = [], []
        for axis, x in zip(self.axes, (m, n, k), strict=True):
            x = float(np.log(x))
            if not axis[0] <= x <= axis[-1]:
                return float("nan")
            i = int(np.clip(np.searchsorted(axis, x, side="right") - 1, 0, len(axis) - 2))
            lo.append(i)
            w.append((x - axis[i]) / (axis[i + 1] - axis[i]))
        corner = self.log_s[lo[0] : lo[0] + 2, lo[1] : lo[1] + 2, lo[2] : lo[2] + 2]
        weights = np.einsum("i,j,k->ijk", *([1 - t, t] for t in w))
        used = weights > 0
        if np.isnan(corner[used]).any():
            return float("nan")
        return float(np.exp(np.sum(np.where(used, corner, 0.0) * weights)))


@cache
def _gemm_rows(root: str) -> pd.DataFrame:
    rows = load_aiconfigurator_gemm(Path(root))
    return rows.assign(engine=engine_of(rows["impl"]), quant=rows["quant"].astype(str))


@cache
def gemm_table(
    gpu: str, engine: str, quant: str, root: str = str(DEFAULT_ROOT)
) -> GemmTable | None:
    """The engine's table of `quant` GEMMs on `gpu`: the implementation (version and kernel)
    with the most rows, the newest on a tie; None if the engine measured none there."""
    rows = _gemm_rows(root)
    rows = rows[rows["gpu"].astype(str).eq(gpu) & rows["engine"].eq(engine)
                & rows["quant"].eq(quant)]  # fmt: skip
    if rows.empty:
        return None
    impl = str(rows["impl"].astype(str).value_counts().sort_index(ascending=False).idxmax())
    return GemmTable.of(rows[rows["impl"].astype(str).eq(impl)])


@cache
def _allreduce_rows(root: str) -> pd.DataFrame:
    return load_custom_allreduce(Path(root))


def allreduce_s(gpu: str, engine: str, n_gpus: int, nbytes: float,
                root: str = str(DEFAULT_ROOT)) -> float:  # fmt: skip
    """The engine's own all-reduce of `nbytes` over `n_gpus` (CUDA-graph rows), log-log
    interpolated between its measured sizes; NaN outside them, and past the size up to which
    the engines run their own kernel (CUSTOM_ALLREDUCE_MAX_BYTES; NCCL's beyond)."""
    rows = _allreduce_rows(root)
    if rows.empty or nbytes > CUSTOM_ALLREDUCE_MAX_BYTES:
        return float("nan")
    rows = rows[rows["gpu"].astype(str).eq(gpu) & rows["engine"].eq(engine)
                & rows["n_gpus"].eq(n_gpus)]  # fmt: skip
    sizes = rows.groupby("bytes")["measured_s"].median()
    if sizes.empty or not sizes.index[0] <= nbytes <= sizes.index[-1]:
        return float("nan")
    x = np.log(sizes.index.to_numpy(float))
    return float(np.exp(np.interp(np.log(nbytes), x, np.log(sizes.to_numpy(float)))))


def table_quant(op_row: dict[str, Any], family: str | None) -> str:
    """The engine tables' precision label of an operator row: its kernel family, else bf16."""
    if family:
        return family
    return "bfloat16" if op_row.get("weight_dtype", op_row.get("dtype")) in ("bf16", "fp16") \
        else str(op_row.get("weight_dtype"))  # fmt: skip


def step_rows(pred: Any, root: str = str(DEFAULT_ROOT)) -> pd.DataFrame:
    """Per GEMM and all-reduce row of a prediction: our seconds and the engine tables' (NaN where
    no table covers the call), with the row's phase, name, call and precision label."""
    sc = pred.scenario
    gpu, engine = sc.gpu.id, sc.engine
    priced = pred.prefill.priced + pred.decode.priced
    out = []
    for row, p in zip(pred.to_dict()["ops"], priced, strict=True):
        if row["op"] == "gemm" and "experts_read" not in p.op.shape:
            quant = table_quant(row, p.op.shape.get("family"))
            table = gemm_table(gpu, engine, quant, root)
            m = np.asarray(row["m"], float)
            if m.size != 1:
                continue
            each = table.at(float(m), row["n"], row["k"]) if table else float("nan")
            what = f"{int(m)}x{row['n']}x{row['k']}"
        elif row["op"] == "comm" and row.get("collective") == "all_reduce":
            quant, what = "all_reduce", f"{row['comm_bytes']:,} B over {row['n_gpus']}"
            each = allreduce_s(gpu, engine, int(row["n_gpus"]), float(row["comm_bytes"]), root)
        else:
            continue
        out.append({"phase": row["phase"], "name": row["name"], "call": what, "quant": quant,
                    "count": row["count"], "ours_s": row["time_s"],
                    "tables_s": each * row["count"]})  # fmt: skip
    return pd.DataFrame(out)


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    """Sums over the rows both sides price, per op class (ours and the tables'), and the rows
    left out. The GEMM sums are NaN unless the tables cover every GEMM of the step but an
    `lm_head` wider than their grid (a step of an unmeasured precision compares nothing)."""
    both = rows[rows["tables_s"].notna()]
    out: dict[str, float] = {"left_out": int(rows["tables_s"].isna().sum())}
    gemms = rows["quant"].ne("all_reduce")
    whole = bool((rows["tables_s"].notna() | rows["name"].eq("lm_head") | ~gemms).all())
    for label, part in (("gemm", both[both["quant"].ne("all_reduce")]),
                        ("all_reduce", both[both["quant"].eq("all_reduce")])):  # fmt: skip
        ok = whole or label == "all_reduce"
        out[f"{label}_ours_s"] = float(part["ours_s"].sum()) if ok else float("nan")
        out[f"{label}_tables_s"] = float(part["tables_s"].sum()) if ok else float("nan")
    return out
