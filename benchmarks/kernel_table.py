"""The kernel benchmark's table (issue 13): one row per kernel × shape with the Triton and torch
times, speedup, the roofline of the call and the fraction of it achieved, and the per-kernel
summary checked against the issue's targets (benchmarks/results/kernel_targets.yaml).

Pure pandas: no device is touched here. FLOPs and minimum HBM bytes come from each kernel's own
`<kernel>_cost` (kernels/, the counts the kernel tests check); the roofline time of a call is
max(FLOPs / compute roof, bytes / memory roof) (Williams, Waterman, Patterson 2009,
"Roofline"), and roofline_fraction = roofline time / Triton time. `roofline_fraction` uses the
roofs measured in the same run (DESIGN.md, "Measuring on a GPU"); `datasheet_fraction` the GPU
preset's datasheet peaks (what the issue's "% of peak" figures use).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

SHAPE_COLUMNS = ("m", "n", "k", "batch", "seq_len", "kv_len", "n_heads", "n_kv_heads",
                 "head_dim", "rows", "hidden")  # fmt: skip
DTYPE_COLUMNS = ("dtype", "kv_dtype", "weight_dtype", "group_size", "residual")
CONTEXT_COLUMNS = ("model", "tp", "phase", "name", "op")
RESULT_COLUMNS = ("kernel", "triton_s", "torch_s", "speedup", "triton_v1_s", "speedup_v1",
                  "flops", "bytes", "roofline_s",
                  "roofline_fraction", "datasheet_fraction", "triton_timing",
                  "torch_timing")  # fmt: skip
PROVENANCE_COLUMNS = ("gpu", "device_name", "driver", "cuda", "torch_version", "triton_version",
                      "commit", "date", "peak_flops_per_s", "hbm_bytes_per_s", "roofs_source",
                      "source")  # fmt: skip
COLUMNS = (*SHAPE_COLUMNS, *DTYPE_COLUMNS, *CONTEXT_COLUMNS, *RESULT_COLUMNS,
           *PROVENANCE_COLUMNS)  # fmt: skip
TARGETS_FILE = Path(__file__).parent / "results" / "kernel_targets.yaml"
PAGE = 16  # positions per KV page, as validate/cases.py builds the paged cache


def _int(row: pd.Series, name: str) -> int:
    return int(float(row[name]))


def kernel_cost(row: pd.Series) -> tuple[float, float]:
    """(FLOPs, minimum HBM bytes) of one suite row, from the kernel module's own cost function."""
    from rooflens.kernels import KERNELS

    kernel, dtype = str(row["kernel"]), str(row["dtype"])
    cost = KERNELS[kernel].cost
    if kernel == "gemm":
        flops, nbytes = cost(_int(row, "m"), _int(row, "n"), _int(row, "k"), dtype)
    elif kernel in ("w8a16_gemm", "w4a16_gemm"):
        flops, nbytes = cost(_int(row, "m"), _int(row, "n"), _int(row, "k"), dtype,
                             _int(row, "group_size"))  # fmt: skip
    elif kernel == "flash_attention":
        dims = ("batch", "seq_len", "n_heads", "n_kv_heads", "head_dim")
        flops, nbytes = cost(*(_int(row, c) for c in dims), dtype)
    elif kernel in ("decode_attention", "paged_decode_attention"):
        kv_dtype = str(row.get("kv_dtype") or dtype)
        args = [_int(row, c) for c in ("batch", "kv_len", "n_heads", "n_kv_heads", "head_dim")]
        extra = {"block_size": PAGE} if kernel == "paged_decode_attention" else {}
        flops, nbytes = cost(*args, dtype, kv_dtype, **extra)
    elif kernel == "rmsnorm":
        residual = bool(_int(row, "residual")) if pd.notna(row.get("residual")) else False
        flops, nbytes = cost(_int(row, "rows"), _int(row, "hidden"), dtype, residual)
    else:
        raise ValueError(f"no cost for kernel {kernel!r}")
    return float(flops), float(nbytes)


def add_derived(
    frame: pd.DataFrame,
    peak_flops_per_s: float,
    hbm_bytes_per_s: float,
    datasheet: tuple[float, float] | None,
) -> pd.DataFrame:
    """Speedup, FLOPs, bytes, roofline time and the achieved fractions of the roofline."""
    out = frame.copy()
    costs = [kernel_cost(row) for _, row in out.iterrows()]
    out["flops"] = [c[0] for c in costs]
    out["bytes"] = [c[1] for c in costs]
    out["speedup"] = out["torch_s"] / out["triton_s"]
    v1 = out["triton_v1_s"] if "triton_v1_s" in out else pd.Series(np.nan, index=out.index)
    out["triton_v1_s"] = pd.to_numeric(v1, errors="coerce")
    out["speedup_v1"] = out["torch_s"] / out["triton_v1_s"]
    out["roofline_s"] = np.maximum(out["flops"] / peak_flops_per_s, out["bytes"] / hbm_bytes_per_s)
    out["roofline_fraction"] = out["roofline_s"] / out["triton_s"]
    if datasheet is None:
        out["datasheet_fraction"] = np.nan
    else:
        ideal = np.maximum(out["flops"] / datasheet[0], out["bytes"] / datasheet[1])
        out["datasheet_fraction"] = ideal / out["triton_s"]
    out["peak_flops_per_s"], out["hbm_bytes_per_s"] = peak_flops_per_s, hbm_bytes_per_s
    return out


def ordered(frame: pd.DataFrame) -> pd.DataFrame:
    """The benchmark's columns in their fixed order (missing ones empty), extra ones dropped."""
    out = frame.reindex(columns=list(COLUMNS))
    for column in SHAPE_COLUMNS:
        out[column] = pd.to_numeric(out[column], errors="coerce").astype("Int64")
    return out.sort_values(["kernel", *SHAPE_COLUMNS], kind="stable").reset_index(drop=True)


def pair_measured(rows: pd.DataFrame) -> pd.DataFrame:
    """Validator result rows (one per impl) -> one row per shape with triton_s and torch_s.

    Rows of the same shape and impl measured more than once are averaged (median)."""
    rows = rows.copy()
    rows["engine"] = rows["impl"].astype(str).str.split(":").str[0]
    keys = [c for c in (*SHAPE_COLUMNS, *DTYPE_COLUMNS, *CONTEXT_COLUMNS, "kernel", "gpu")
            if c in rows and rows[c].notna().any()]  # fmt: skip
    rows[keys] = rows[keys].astype(object).where(rows[keys].notna(), "")
    times = rows.pivot_table(index=keys, columns="engine", values="measured_s", aggfunc="median")
    timing = rows.groupby([*keys, "engine"])["timing"].first().unstack("engine")
    out = pd.DataFrame({"triton_s": times.get("triton"), "torch_s": times.get("torch"),
                        "triton_v1_s": times.get("triton_v1"),
                        "triton_timing": timing.get("triton"),
                        "torch_timing": timing.get("torch")}).reset_index()  # fmt: skip
    out[keys] = out[keys].replace("", np.nan)
    return out.dropna(subset=["triton_s", "torch_s"]).reset_index(drop=True)


def load_targets(path: Path = TARGETS_FILE) -> list[dict]:
    return list(yaml.safe_load(path.read_text())["targets"])


def _applies(frame: pd.DataFrame, where: dict) -> pd.Series:
    keep = pd.Series(True, index=frame.index)
    for key, value in where.items():
        column, side = key.rsplit("_", 1)
        values = pd.to_numeric(frame[column], errors="coerce")
        keep &= values <= float(value) if side == "max" else values >= float(value)
    return keep


def check_targets(frame: pd.DataFrame, targets: list[dict]) -> pd.DataFrame:
    """One row per target: the rows it applies to, the statistic now, and whether it is met."""
    rows = []
    for t in targets:
        sel = frame[(frame["kernel"] == t["kernel"]) & _applies(frame, t.get("where") or {})]
        values = pd.to_numeric(sel[t["metric"]], errors="coerce").dropna()
        now = (
            float(values.median() if t["stat"] == "median" else values.min())
            if len(values)
            else np.nan
        )
        rows.append({"kernel": t["kernel"], "target": t["text"], "metric": t["metric"],
                     "stat": t["stat"], "rows": len(values), "now": now, "goal": t["value"],
                     "met": bool(now >= t["value"]) if len(values) else None})  # fmt: skip
    return pd.DataFrame(rows)


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Per kernel: shapes, median and worst speedup, median fractions of the roofline."""
    groups = frame.groupby("kernel")
    return pd.DataFrame({
        "shapes": groups.size(),
        "median_speedup": groups["speedup"].median(),
        "worst_speedup": groups["speedup"].min(),
        "median_speedup_v1": groups["speedup_v1"].median(),
        "worst_speedup_v1": groups["speedup_v1"].min(),
        "median_roofline_fraction": groups["roofline_fraction"].median(),
        "median_datasheet_fraction": groups["datasheet_fraction"].median(),
    }).reset_index()  # fmt: skip


def report(frame: pd.DataFrame, provenance: str) -> str:
    """The per-kernel summary and the target check of a results table, as markdown."""
    return markdown(summarize(frame), check_targets(frame, load_targets()), provenance)


def markdown(summary: pd.DataFrame, targets: pd.DataFrame, provenance: str) -> str:
    """The summary and the target check as markdown tables (what the script prints and stores)."""

    def table(frame: pd.DataFrame) -> str:
        text = frame.copy()
        for column in text.columns:
            if text[column].dtype.kind == "f":
                text[column] = text[column].map(lambda v: "—" if pd.isna(v) else f"{v:.3g}")
        head = "| " + " | ".join(text.columns) + " |"
        rule = "| " + " | ".join("---" for _ in text.columns) + " |"
        body = ["| " + " | ".join(str(v) for v in row) + " |" for row in text.to_numpy()]
        return "\n".join([head, rule, *body])

    units = ("speedup = torch_s / triton_s (×), speedup_v1 the same of the 2026-11-24 kernels "
             "(issue 25's v1 variants); fractions of the roofline max(FLOPs / compute "
             "roof, bytes / memory roof), unitless")  # fmt: skip
    status = targets.assign(met=targets["met"].map({True: "yes", False: "no", None: "no rows"}))
    return (f"# Kernel benchmark\n\n{provenance}\n\n{units}\n\n"
            f"## Per kernel\n\n{table(summary)}\n\n"
            f"## Issue 13 targets\n\n{table(status)}\n")  # fmt: skip
