"""A step's GEMMs, attention and all-reduces by the engines' own measured kernels: a second
route to the whole-step price (`python -m benchmarks.engine_steps`).

aiconfigurator (NVIDIA) prices a step by looking each operator up in its engine's tables of
measured kernels. This module does the same for the operator table's dense GEMMs, attention
and tensor-parallel all-reduces: each row's call is read off the engine's table on that GPU
(the shared measurements, validate/aiconfigurator.py), interpolated linearly in log time over
the log of each size between the table's grid points (GEMM: m, n, k; attention: batch and KV
or prompt length, at the row's head layout and precision, full attention), never
extrapolated, nor across the harness's L2 cliff (a GEMM whose copies stay in L2 is never read
off cold grid points, or the other way), and the step's sums are set beside the calibrated
price of the same rows. A row outside a table's grid (an `lm_head` wider than 65,536), across
that cliff, or of a precision the engine did not measure is left out of both sums and counted.

On a measured GPU this is in sample (the calibration was fitted on these tables), so it tells
what the per-call errors add up to over a real step, per precision and tensor-parallel degree;
it says nothing about a GPU nobody measured (`rooflens validate cv` does). Each row is also
priced as the table's harness ran it (`warm_s`: replayed over its collector's copies, which stay
in L2 where they fit, model/pricing/l2_resident.py), beside the deployment's price (`ours_s`,
which streams every operand cold, as a step does).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import Profile, get_profile
from rooflens.model.pricing.custom_allreduce import CUSTOM_ALLREDUCE_MAX_BYTES
from rooflens.model.pricing.kernel_columns import map_distinct
from rooflens.model.pricing.l2_resident import REPLAY_COPIES, fits_l2, replayed, reread_bytes
from rooflens.model.pricing.roofline import price_op
from rooflens.model.specs.dtypes import dtype_bytes
from rooflens.validate.aiconfigurator import (
    ATTENTION_COPIES,
    gemm_copies,
    load_aiconfigurator_attention,
    load_aiconfigurator_gemm,
)
from rooflens.validate.custom_ar_fit import load_custom_allreduce
from rooflens.validate.fit_terms import engine_of
from rooflens.validate.frontier import most_measured
from rooflens.validate.measured_files import DEFAULT_ROOT

GEMM_AXES = ("m", "n", "k")
ATTENTION_AXES = {"attention_decode": ("batch", "kv_len"),
                  "attention_prefill": ("batch", "seq_len")}  # fmt: skip
ATTENTION_KEYS = ("n_heads", "n_kv_heads", "head_dim", "dtype", "kv_dtype")


@dataclass(frozen=True)
class LogGrid:
    """One implementation's latencies over a full grid of call sizes (GEMM: m, n, k; attention:
    batch and KV or prompt length), multilinear in log time over the log of each size."""

    impl: str
    axes: tuple[np.ndarray, ...]  # log of each axis's grid points
    log_s: np.ndarray  # log seconds, NaN where the grid has no row
    # per grid point, whether its harness kept what it re-reads in L2 (None: not stated)
    resident: np.ndarray | None = None

    @classmethod
    def of(cls, rows: pd.DataFrame, names: tuple[str, ...], resident: str = "") -> LogGrid:
        """The grid of `rows` over the axes `names`; `resident`: a boolean column of theirs
        saying which rows ran with their re-read operand in L2."""
        grid = [np.sort(rows[a].unique().astype(float)) for a in names]
        full = pd.MultiIndex.from_product(grid, names=list(names))
        shape = [len(g) for g in grid]

        def cube(column: str, how: str) -> np.ndarray:
            per_point = rows.groupby(list(names))[column].agg(how)
            return per_point.reindex(full).to_numpy(float).reshape(shape)

        warm = cube(resident, "max") > 0 if resident else None
        return cls(str(rows["impl"].iloc[0]), tuple(np.log(g) for g in grid),
                   np.log(cube("measured_s", "median")), warm)  # fmt: skip

    def at(self, *sizes: float, resident: bool | None = None) -> float:
        """Seconds of the call; NaN outside the grid or next to a hole (never extrapolated), and,
        where `resident` says whether the call's harness would keep it in L2, next to a grid
        point on the other side of that cliff: TensorRT-LLM's RTX PRO 6000 table runs 1 x 16,384
        x 8,192 FP8 resident (its one copy of 134 MB fills the L2) in 31 us and 1 x 51,200 x
        8,192 cold in 287 us, and between them reads 1 x 28,672 x 8,192 (235 MB, cold at any
        copies) at 93 us, 2.5 TB/s off 1.6 TB/s of GDDR7."""
        lo, frac = [], []
        for axis, x in zip(self.axes, sizes, strict=True):
            x = float(np.log(x))
            if not axis[0] <= x <= axis[-1]:
                return float("nan")
            if len(axis) == 1:
                lo.append(0)
                frac.append(0.0)
                continue
            i = int(np.clip(np.searchsorted(axis, x, side="right") - 1, 0, len(axis) - 2))
            lo.append(i)
            frac.append((x - axis[i]) / (axis[i + 1] - axis[i]))
        total = 0.0
        for corner in product((0, 1), repeat=len(lo)):
            sides = [f if c else 1.0 - f for c, f in zip(corner, frac, strict=True)]
            weight = float(np.prod(sides))
            if weight == 0.0:
                continue
            point = tuple(i + c for i, c in zip(lo, corner, strict=True))
            value = self.log_s[point]
            if np.isnan(value):
                return float("nan")
            if resident is not None and self.resident is not None:
                if bool(self.resident[point]) != resident:
                    return float("nan")
            total += weight * value
        return float(np.exp(total))


def _most_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of the engine's default kernel (validate/frontier.py `most_measured`)."""
    return rows[rows["impl"].astype(str).eq(most_measured(rows["impl"]))]


@cache
def _gemm_rows(root: str) -> pd.DataFrame:
    rows = load_aiconfigurator_gemm(Path(root))
    return rows.assign(engine=engine_of(rows["impl"]), quant=rows["quant"].astype(str))


@cache
def gemm_table(gpu: str, engine: str, quant: str, root: str = str(DEFAULT_ROOT)) -> LogGrid | None:
    """The engine's table of `quant` GEMMs on `gpu` (`_most_rows`); None if it measured none."""
    rows = _gemm_rows(root)
    rows = rows[rows["gpu"].astype(str).eq(gpu) & rows["engine"].eq(engine)
                & rows["quant"].eq(quant)]  # fmt: skip
    if not len(rows):
        return None
    rows = _most_rows(rows)
    stored = rows["weight_dtype"].fillna(rows["dtype"]).astype(str)  # none: the MMA's dtype
    weights = (rows["n"] * rows["k"] * map_distinct(stored, dtype_bytes)).to_numpy(float)
    copies = rows[REPLAY_COPIES].to_numpy(float)
    rows = rows.assign(resident=fits_l2(copies, weights, get_gpu(gpu)))
    return LogGrid.of(rows, GEMM_AXES, resident="resident")


@cache
def _attention_rows(root: str) -> pd.DataFrame:
    rows = load_aiconfigurator_attention(Path(root))
    rows = rows[rows["window"].fillna(0).eq(0)]  # full attention: the dense models' layers
    return rows.assign(engine=engine_of(rows["impl"]), gpu=rows["gpu"].astype(str))


@cache
def attention_table(gpu: str, engine: str, op: str, key: tuple[Any, ...],
                    root: str = str(DEFAULT_ROOT)) -> LogGrid | None:  # fmt: skip
    """The engine's attention table on `gpu` for one head layout and precision (`key`: values
    of ATTENTION_KEYS), over ATTENTION_AXES[op]; None if it measured none."""
    rows = _attention_rows(root)
    rows = rows[rows["gpu"].eq(gpu) & rows["engine"].eq(engine) & rows["op"].eq(op)]
    for name, value in zip(ATTENTION_KEYS, key, strict=True):
        rows = rows[rows[name].eq(value)]
    return LogGrid.of(_most_rows(rows), ATTENTION_AXES[op]) if len(rows) else None


@cache
def _allreduce_rows(root: str) -> pd.DataFrame:
    return load_custom_allreduce(Path(root))


@cache
def _allreduce_sizes(gpu: str, engine: str, n_gpus: int, root: str) -> pd.Series:
    """One engine's measured all-reduce seconds by message bytes, on one GPU and group size."""
    rows = _allreduce_rows(root)
    if rows.empty:
        return pd.Series(dtype=float)
    rows = rows[rows["gpu"].astype(str).eq(gpu) & rows["engine"].eq(engine)
                & rows["n_gpus"].eq(n_gpus)]  # fmt: skip
    return rows.groupby("bytes")["measured_s"].median()


def allreduce_s(gpu: str, engine: str, n_gpus: int, nbytes: float,
                root: str = str(DEFAULT_ROOT)) -> float:  # fmt: skip
    """The engine's own all-reduce of `nbytes` over `n_gpus` (CUDA-graph rows), log-log
    interpolated between its measured sizes; NaN outside them, and past the size up to which
    the engines run their own kernel (CUSTOM_ALLREDUCE_MAX_BYTES; NCCL's beyond)."""
    sizes = _allreduce_sizes(gpu, engine, n_gpus, root)
    if nbytes > CUSTOM_ALLREDUCE_MAX_BYTES or sizes.empty:
        return float("nan")
    if not sizes.index[0] <= nbytes <= sizes.index[-1]:
        return float("nan")
    x = np.log(sizes.index.to_numpy(float))
    return float(np.exp(np.interp(np.log(nbytes), x, np.log(sizes.to_numpy(float)))))


def table_quant(op_row: dict[str, Any], family: str | None) -> str:
    """The engine tables' precision label of an operator row: its kernel family; bf16 for a
    16-bit matmul; '' (no table) for a pair no table measures, such as fp8 weights over bf16
    activations (vLLM's FP8 Marlin on GPUs without FP8 units), which must not read the W8A8
    table."""
    if family:
        return family
    return "bfloat16" if op_row.get("weight_dtype", op_row.get("dtype")) in ("bf16", "fp16") else ""


def step_rows(
    pred: Any, root: str = str(DEFAULT_ROOT), profile: Profile | None = None
) -> pd.DataFrame:
    """Per dense GEMM, attention and all-reduce row of a prediction: our seconds and the engine
    tables' (NaN where no table covers the call), with the row's phase, name, call and label
    (the GEMM's precision, `attention` or `all_reduce`). `profile`: the terms the prediction
    was priced with, where not its scenario's named profile (a fold's, `run(..., profile=)`)."""
    sc = pred.scenario
    gpu, engine = sc.gpu.id, sc.engine
    profile = profile or get_profile(sc.profile, sc.gpu, engine)
    priced = pred.prefill.priced + pred.decode.priced
    out = []
    for row, p in zip(pred.to_dict()["ops"], priced, strict=True):
        copies: float | None = None  # how the table's harness replayed the call
        if row["op"] == "gemm" and "experts_read" not in p.op.shape:
            quant = table_quant(row, p.op.shape.get("family"))
            table = gemm_table(gpu, engine, quant, root)
            m = np.asarray(row["m"], float)
            if m.size != 1:
                continue
            what = f"{int(m)}x{row['n']}x{row['k']}"
            harness = pd.DataFrame(
                {
                    "framework": [engine],
                    "gemm_dtype": [quant],
                    "n": [row["n"]],
                    "k": [row["k"]],
                    "kernel_source": [""],
                }
            )
            copies = float(gemm_copies(harness, pd.Series([gpu])).iloc[0])  # fmt: skip
            in_l2 = bool(fits_l2(copies, reread_bytes(p.op), sc.gpu))  # as its harness ran it
            each = table.at(float(m), row["n"], row["k"], resident=in_l2) if table else np.nan
        elif row["op"] in ATTENTION_AXES:
            quant = "attention"
            sizes = [float(np.asarray(row[a], float).mean()) for a in ATTENTION_AXES[row["op"]]]
            fp8 = row["op"] == "attention_prefill" and row["dtype"] == row["kv_dtype"] == "fp8"
            key = (row["n_heads"], row["n_kv_heads"], row["head_dim"], "fp8" if fp8 else "bf16",
                   "fp8" if row["kv_dtype"] == "fp8" else "bf16")  # fmt: skip
            table = attention_table(gpu, engine, row["op"], key, root)
            each = table.at(*sizes) if table else float("nan")
            copies = ATTENTION_COPIES
            what = " x ".join(f"{a} {x:,.0f}" for a, x in zip(ATTENTION_AXES[row["op"]], sizes,
                                                               strict=True))  # fmt: skip
        elif row["op"] == "comm" and row.get("collective") == "all_reduce":
            quant, what = "all_reduce", f"{row['comm_bytes']:,} B over {row['n_gpus']}"
            each = allreduce_s(gpu, engine, int(row["n_gpus"]), float(row["comm_bytes"]), root)
        else:
            continue
        warm = row["time_s"]
        if copies is not None and not np.isnan(copies):
            warm = float(np.mean(price_op(replayed(p.op, copies), sc.system, profile).total_s))
        out.append({"phase": row["phase"], "name": row["name"], "call": what, "quant": quant,
                    "count": row["count"], "ours_s": row["time_s"], "warm_s": warm,
                    "tables_s": each * row["count"]})  # fmt: skip
    return pd.DataFrame(out)


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    """Per op class (GEMM, attention, all-reduce) the sums of our seconds and the tables' over
    the rows both price, and the rows left out. GEMM and attention sums are NaN unless the
    tables cover every such row (an `lm_head` wider than the GEMM grid excepted): a step of a
    precision or head layout the engine did not measure compares nothing. All-reduces compare
    where the engine's own kernel runs (up to 8 MiB)."""
    covered = rows["tables_s"].notna()
    out: dict[str, float] = {"left_out": int((~covered).sum())}
    kinds = {"gemm": ~rows["quant"].isin(["attention", "all_reduce"]),
             "attention": rows["quant"].eq("attention"),
             "all_reduce": rows["quant"].eq("all_reduce")}  # fmt: skip
    for label, mine in kinds.items():
        whole = (covered | ~mine | (rows["name"].eq("lm_head") & mine)).all()
        ok = label == "all_reduce" or bool(whole)
        part = rows[mine & covered]
        out[f"{label}_ours_s"] = float(part["ours_s"].sum()) if ok else float("nan")
        out[f"{label}_warm_s"] = float(part["warm_s"].sum()) if ok else float("nan")
        out[f"{label}_tables_s"] = float(part["tables_s"].sum()) if ok else float("nan")
    return out
