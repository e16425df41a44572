"""The validator's own GPU runs as measurement tables: what each row ran, and which rows time
the kernel alone.

`read_runs` reads `rooflens-<gpu>/{torch,triton}/*.csv` under the shared measurement folder
(validate/store.py's results format: the kernel contract's columns plus `measured_s` in seconds
per call, `impl`, `timing`, `gpu`). `as_run` makes a row describe the call that ran (the runner
uses it too); `kernel_rows` picks the rows calibration and the accuracy budget use.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

# Runner rows timed by do_bench at or above this run with the launch queue ahead of the GPU
# (the runner's old CUDA-graph threshold, validate/runner.py at d2b67d1).
LAUNCH_HIDDEN_S = 50e-6
CALIBRATION_IMPLS = ("torch:mm", "torch:sdpa", "triton:rmsnorm")  # kernel_rows: why
SHAPE_COLUMNS = ("m", "n", "k", "weight_dtype", "group_size", "batch", "seq_len", "kv_len",
                 "n_heads", "n_kv_heads", "head_dim", "rows", "hidden", "residual", "norm",
                 "dtype", "kv_dtype")  # fmt: skip


def read_runs(root: Path) -> pd.DataFrame:
    """Every row of the validator's own GPU runs (`rooflens-<gpu>/{torch,triton}/*.csv`): the
    results format of validate/store.py, already in the contract's columns and seconds.

    Rows describe the call that ran (`as_run`: a quantized kernel's torch baseline is a 16-bit
    GEMM). Each row keeps its `timing` (cuda_graph or do_bench), `kernel` and `folder`.
    """
    frames = []
    for path in sorted(root.glob("rooflens-*/*/*.csv")):
        d = as_run(pd.read_csv(path))
        d["measured_s"] = pd.to_numeric(d["measured_s"], errors="coerce")
        d["folder"] = path.parent.name
        d["source"] = str(path.relative_to(root))
        frames.append(d)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def as_run(frame: pd.DataFrame) -> pd.DataFrame:
    """Result rows describing the call that ran: the torch baseline of a weight-only quantized
    GEMM is a 16-bit torch.mm (validate/cases.py), so its `weight_dtype` becomes `dtype` and
    `group_size` is dropped; `group_size` is kept only where weights are quantized. Likewise
    the SDPA baseline of decode over an fp8 cache reads a 16-bit cache: its `kv_dtype` becomes
    `dtype`."""
    d = frame.copy()
    if "kv_dtype" in d.columns and "impl" in d.columns:
        sdpa = d["impl"].astype(str).str.startswith("torch:") & d["kv_dtype"].eq("fp8")
        d["kv_dtype"] = d["kv_dtype"].astype(object)
        d.loc[sdpa, "kv_dtype"] = d.loc[sdpa, "dtype"]
    if "weight_dtype" not in d.columns or not d["weight_dtype"].notna().any():
        return d
    baseline = d["impl"].astype(str).str.startswith("torch:") & d["op"].eq("gemm")
    quantized = baseline & d["weight_dtype"].notna() & d["weight_dtype"].ne(d["dtype"])
    d["weight_dtype"] = d["weight_dtype"].astype(object)
    d.loc[quantized, "weight_dtype"] = d.loc[quantized, "dtype"]
    if "group_size" in d.columns:
        d["group_size"] = pd.to_numeric(d["group_size"], errors="coerce")
        d["group_size"] = d["group_size"].where(d["weight_dtype"].ne(d["dtype"]))
    return d


def kernel_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of `load_rooflens` that calibration and the accuracy budget use: one median per
    (GPU, impl, contract shape), timed with the kernel alone on the clock.

    - Timing: inside a CUDA graph, or with do_bench at >= LAUNCH_HIDDEN_S per call, where the
      launch queue runs ahead of the GPU. A shorter do_bench row includes Python launch cost
      (the old runner policy measured small Triton decode calls at 54-121 us against ~8 us in
      a graph: rooflens-h100/README.md).
    - Implementations: one per operator, the fastest measured: cuBLAS (`torch:mm`), SDPA
      (`torch:sdpa`) and the project's fused Triton RMSNorm. torch's `rms_norm` runs several
      kernels (6.7-9 us at 1-32 rows under a graph, where the fused kernel takes 2.6 us; 1.2-3.4x
      slower at every shape). The project's other Triton kernels are on par with or slower than
      the vendor kernel of the same shape (median speed ratio at d2b67d1: GEMM 0.84x of cuBLAS,
      W4A16 0.15x and W8A16 1.0x of the bf16 GEMM, decode attention 1.01x and prefill 0.79x of
      SDPA): they describe this project's kernels, not the GPU. `load_rooflens` keeps them all.
    - Repeats: torch baselines measured once per Triton kernel (decode and paged decode share
      SDPA shapes; W4A16 and W8A16 share bf16 GEMM shapes) take their median.
    """
    if frame.empty:
        return frame
    timed = frame["timing"].eq("cuda_graph") | frame["measured_s"].ge(LAUNCH_HIDDEN_S)
    impl = frame["impl"].astype(str)
    wanted = impl.isin(CALIBRATION_IMPLS)
    rows = frame[timed & wanted & frame["measured_s"].gt(0)]
    shape = [c for c in SHAPE_COLUMNS if c in rows.columns]
    keys = ["gpu", "op", "impl", *shape]
    fixed = rows.groupby(keys, dropna=False, sort=True)
    kept = [c for c in ("source", "timing", "model", "name", "tp") if c in rows.columns]
    return fixed.agg({"measured_s": "median", **dict.fromkeys(kept, "first")}).reset_index()
