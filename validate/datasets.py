"""Loaders for the shared public GPU measurements (../shared/data/measured/, see its README).

Each loader returns rows in the kernel CSV contract of DESIGN.md (`op` plus its shape columns)
plus `measured_s` (seconds per call), `impl` (engine and kernel), `gpu` (preset id) and `source`
(file, relative to the measurement folder), so measured and predicted tables join on identical
keys. Beyond the contract's `gemm`, `attention_prefill` and `attention_decode`, the memory-bound
operators of Vidur's tables use three validator ops (priced in validate/predict.py):
`norm` (rows, hidden, residual, norm), `elementwise` (elements_read, elements_written) and
`embedding` (rows, hidden). The fused-MoE table loads as the contract's `moe` op
(`load_moe`, labelled tuned or untuned by vLLM's shipped configs, validate/moe_configs.py;
`load_moe_kernels` adds the benchmark's routing and keeps moe_ep_size = 1); the
NCCL table has its own columns (`load_nccl`; comm is fitted in validate/comm_fit.py).
The project's own H100 runs (`rooflens-*/`, this validator's results format) load with
`load_rooflens`; `load_kernels` keeps the rows that time the kernel alone (`kernel_rows`).

Units on disk: aiconfigurator `latency` is milliseconds per call (CUDA-graph replay); Vidur
`time_stats.*.median` is milliseconds of CUDA time (eager PyTorch, profiler); NCCL
`message_size` counts elements, not bytes; rooflens `measured_s` is seconds per call.
"""

from __future__ import annotations

import warnings
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from hardware.errors import RooflensError
from validate.moe_configs import SUBSET_COLUMN, config_labels
from validate.moe_routing import with_routing
from validate.runs import as_run, kernel_rows, read_runs
from validate.store import load_results

DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "shared" / "data" / "measured"
MS = 1e-3
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "int8": "int8"}
DEVICE_IDS = {"NVIDIA A100-SXM4-80GB": "a100-sxm-80gb", "a100": "a100-sxm-80gb", "a40": "a40"}
KERNEL_OPS = ("gemm", "attention_prefill", "attention_decode", "moe", "norm", "elementwise",
              "embedding")  # fmt: skip
# Vidur op -> (validator op, projection) with the GEMM shapes of the measurement README.
VIDUR_GEMMS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")


def _gpu_id(name: str) -> str:
    if name not in DEVICE_IDS:
        raise RooflensError(f"measured device '{name}' has no GPU preset; add it to DEVICE_IDS")
    return DEVICE_IDS[name]


def _dtype(values: pd.Series) -> pd.Series:
    return values.map(lambda v: DTYPES.get(str(v), str(v)))


def _rel(path: Path, root: Path) -> str:
    return str(path.relative_to(root))


def _impl(d: pd.DataFrame) -> pd.Series:
    return d["framework"].str.lower() + "-" + d["version"] + ":" + d["kernel_source"]


IMPL_COLUMNS = ("framework", "version", "kernel_source", "device", "latency")


class SkippedFile(UserWarning):
    """A measurement file left out because it is not one (empty, truncated, foreign)."""


def _read(path: Path, columns: tuple[str, ...]) -> pd.DataFrame | None:
    """A measurement table, or None with a one-line warning naming the file when it cannot be
    read or lacks the columns its loader needs (the CLI prints it as `warning: ...`)."""
    try:
        frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except pd.errors.EmptyDataError:
        reason = "empty"
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError) as exc:
        reason = f"unreadable ({type(exc).__name__})"
    else:
        missing = [c for c in columns if c not in frame.columns]
        if not missing and len(frame):
            return frame
        reason = f"no {missing[0]} column (foreign or truncated)" if missing else "no rows"
    warnings.warn(f"skipping {path}: {reason}", SkippedFile, stacklevel=2)
    return None


def _check_root(root: Path) -> Path:
    if not root.is_dir():
        raise RooflensError(f"measurement folder not found: {root} (pass --measured DIR)")
    return root


def load_aiconfigurator_gemm(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """Y[m,n] = X[m,k]·W[n,k]ᵀ per engine (vLLM, SGLang), bf16, A100-SXM4-80GB."""
    frames = []
    for path in sorted(_check_root(root).glob("aiconfigurator-*/gemm/*/*/gemm_perf.parquet")):
        d = _read(path, ("m", "n", "k", "gemm_dtype", *IMPL_COLUMNS))
        if d is None:
            continue
        frames.append(
            pd.DataFrame(
                {
                    "op": "gemm",
                    "m": d["m"], "n": d["n"], "k": d["k"],
                    "dtype": _dtype(d["gemm_dtype"]),
                    "measured_s": d["latency"] * MS,
                    "impl": _impl(d),
                    "gpu": d["device"].map(_gpu_id),
                    "source": _rel(path, root),
                }
            )
        )  # fmt: skip
    return _concat(frames)


def load_aiconfigurator_attention(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """Causal prefill (`context`) and decode (`generation`) attention, one layer per call.

    Head counts are per GPU. Decode `step` counts tokens already cached, so the kernel reads
    step + 1 positions: kv_len = step + 1 (the contract's convention, new token included).
    """
    frames = []
    for phase in ("context", "generation"):
        pattern = f"aiconfigurator-*/attention/*/*/{phase}_attention_perf.parquet"
        for path in sorted(_check_root(root).glob(pattern)):
            d = _read(path, ("batch_size", "num_heads", "num_key_value_heads", "head_dim",
                             "attn_dtype", "kv_cache_dtype", *IMPL_COLUMNS,
                             "isl" if phase == "context" else "step"))  # fmt: skip
            if d is None:
                continue
            rows = pd.DataFrame(
                {
                    "op": "attention_prefill" if phase == "context" else "attention_decode",
                    "batch": d["batch_size"],
                    "n_heads": d["num_heads"],
                    "n_kv_heads": d["num_key_value_heads"],
                    "head_dim": d["head_dim"],
                    "dtype": _dtype(d["attn_dtype"]),
                    "kv_dtype": _dtype(d["kv_cache_dtype"]),
                    "measured_s": d["latency"] * MS,
                    "impl": _impl(d),
                    "gpu": d["device"].map(_gpu_id),
                    "source": _rel(path, root),
                    "kv_write": 1,  # the engine's KV-cache write kernel is in the call
                }
            )
            if phase == "context":
                rows.insert(2, "seq_len", d["isl"])
            else:
                rows.insert(2, "kv_len", d["step"] + 1)
            frames.append(rows)
    return _concat(frames)


def load_vidur(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """Vidur's per-layer operator times (fp16, eager PyTorch) on A100 and A40.

    GEMM shapes follow the measurement README (M = num_tokens; fused QKV N = (H + 2·K)·Dh/TP;
    o_proj K = D/TP; up N = F·(2 if gated)/TP; down K = F/TP). Memory-bound ops: RMSNorm (or
    LayerNorm for the ungated phi-2) over [n, D] without the residual (Vidur times `add`
    separately); `mlp_act` reads the up projection's output and writes [n, F/TP]; `attn_rope`
    rotates q and k in place; `emb` gathers n rows. Vidur's residual `add` is not loaded: the
    serving stack fuses it into the norm (model/ops.py), and in Vidur's loop its inputs were
    just written by the previous op, so on A100 (40 MB L2) it runs from cache at up to 2x
    the HBM roofline: a property of the harness, not of the kernel.
    """
    frames = []
    for path in sorted(_check_root(root).glob("vidur/compute/*/*/*/mlp.csv")):
        d = _read(path, ("num_tokens", "n_embd", "n_head", "n_kv_head", "n_expanded_embd",
                         "num_tensor_parallel_workers", "use_gated_mlp"))  # fmt: skip
        if d is None:
            continue
        gpu = _gpu_id(path.relative_to(root).parts[2])
        n = d["num_tokens"].astype(float)
        D, H, K = d["n_embd"], d["n_head"], d["n_kv_head"]
        F, tp = d["n_expanded_embd"], d["num_tensor_parallel_workers"]
        gated = d["use_gated_mlp"].astype(bool)
        Dh = D // H
        up = np.where(gated, 2, 1)
        model = path.parent.name
        gemm_kn = {
            "attn_pre_proj": (D, (H + 2 * K) * Dh // tp),
            "attn_post_proj": (D // tp, D),
            "mlp_up_proj": (D, F * up // tp),
            "mlp_down_proj": (F // tp, D),
        }
        # eager = 1: PyTorch's unfused kernels timed one by one (model/op.py memory_op)
        base = {"dtype": "fp16", "impl": "vidur:eager", "gpu": gpu, "source": _rel(path, root),
                "model": model, "tp": tp, "eager": 1}  # fmt: skip

        def rows(name: str, op: str, **cols: object) -> pd.DataFrame | None:
            return _vidur_rows(d, base, name, op, **cols)  # noqa: B023 (called in this iteration)

        for name, (k, nn) in gemm_kn.items():
            frames.append(rows(name, "gemm", m=n, n=nn, k=k))
        norm = np.where(gated, "rmsnorm", "layernorm")
        for name in ("input_layernorm", "post_attention_layernorm"):
            frames.append(rows(name, "norm", rows=n, hidden=D, residual=0, norm=norm))
        frames.append(rows("emb", "embedding", rows=n, hidden=D))
        act_out = n * F / tp
        frames.append(
            rows("mlp_act", "elementwise", elements_read=act_out * up, elements_written=act_out)
        )
        rope = n * (H + K) * Dh / tp
        frames.append(rows("attn_rope", "elementwise", elements_read=rope, elements_written=rope))
    return _concat([f for f in frames if f is not None])


def _vidur_rows(
    d: pd.DataFrame, base: dict[str, object], name: str, op: str, **cols: object
) -> pd.DataFrame | None:
    """Rows of one Vidur operator (None when the model has no such op, e.g. phi-2's 2nd norm)."""
    column = f"time_stats.{name}.median"
    if column not in d.columns:
        return None
    frame = pd.DataFrame({"op": op, **cols, **base, "measured_s": d[column] * MS})
    frame.insert(1, "name", name)
    return frame


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    if not frames:
        return pd.DataFrame(columns=["op", "measured_s", "impl", "gpu", "source"])
    return pd.concat(frames, ignore_index=True)


@cache
def _load_kernels(root: str) -> pd.DataFrame:
    path = Path(root)
    frame = _concat(
        [
            load_aiconfigurator_gemm(path),
            load_aiconfigurator_attention(path),
            load_vidur(path),
            load_moe_kernels(path),
            kernel_rows(read_runs(path)),
        ]
    )
    return frame[frame["measured_s"] > 0].reset_index(drop=True)


def load_rooflens(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """Every row of the validator's own GPU runs (`rooflens-<gpu>/{torch,triton}/*.csv`),
    as validate/runs.py reads them; `load_kernels` keeps their `kernel_rows`."""
    return read_runs(_check_root(root))


def load_moe_kernels(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """The MoE rows the kernel comparison and calibration use: moe_ep_size = 1, with the work
    the benchmark's power-law routing gave the GPU (validate/moe_routing.py).

    The expert-parallel rows are left out: the collector feeds all N tokens to one GPU and
    masks the experts it does not hold, so the kernel sorts and pads every token's picks, and
    the GPU holds the heaviest expert group by construction; neither is what an EP deployment
    runs (its GPUs receive only their own tokens after the all-to-all dispatch).
    """
    moe = load_moe(root)
    return with_routing(moe[moe["moe_ep_size"] == 1]) if len(moe) else moe


def load_kernels(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """Every kernel measurement of the shared folder in one table (a fresh copy, cached read)."""
    return _load_kernels(str(_check_root(root))).copy()


def load_moe(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """Fused MoE layer times (vLLM fused_moe, bf16) in the kernel contract's `moe` columns
    (num_tokens, hidden_size, inter_size, topk, num_experts, moe_tp_size, moe_ep_size, dtype)
    plus the benchmark's routing `distribution` (power-law token counts per expert, exponent
    1.01 or 1.2; no uniform rows) and `moe_config`: whether vLLM ran a tuned config for the
    shape (validate/moe_configs.py)."""
    frames = []
    for path in sorted(_check_root(root).glob("aiconfigurator-*/moe/*/*/moe_perf.parquet")):
        keep = ["num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
                "moe_ep_size", "distribution"]  # fmt: skip
        d = _read(path, (*keep, "moe_dtype", *IMPL_COLUMNS))
        if d is None:
            continue
        frame = d[keep].copy()
        frame.insert(0, "op", "moe")
        frame["dtype"] = _dtype(d["moe_dtype"])
        frame["measured_s"] = d["latency"] * MS
        frame["impl"], frame["gpu"] = _impl(d), d["device"].map(_gpu_id)
        frame["source"] = _rel(path, root)
        frame[SUBSET_COLUMN] = config_labels(frame)
        frames.append(frame)
    return _concat(frames)


def load_nccl(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """NCCL collectives on A100 (aiconfigurator): `message_bytes` = elements × dtype size."""
    frames = []
    for path in sorted(_check_root(root).glob("aiconfigurator-*/comm/nccl/*/nccl_perf.parquet")):
        d = _read(path, ("op_name", "num_gpus", "message_size", "nccl_dtype", "latency",
                         "version", "device"))  # fmt: skip
        if d is None:
            continue
        dtype = _dtype(d["nccl_dtype"])
        size = dtype.map({"fp16": 2, "bf16": 2, "fp32": 4, "int8": 1}).astype(float)
        frame = pd.DataFrame(
            {
                "op": d["op_name"],
                "n_gpus": d["num_gpus"],
                "message_bytes": d["message_size"] * size,
                "dtype": dtype,
                "measured_s": d["latency"] * MS,
                "impl": "nccl-" + d["version"],
                "gpu": d["device"].map(_gpu_id),
                "source": _rel(path, root),
            }
        )
        frames.append(frame)
    return _concat(frames)


def training_table(measured: Path, results: Path, devices: list[str]) -> pd.DataFrame:
    """What `calibrate fit` and `validate cv` learn from: the shared measurements
    (`load_kernels`) plus each device's stored runs, reduced as the shared
    H100 runs are (`as_run`, then `kernel_rows`)."""
    tables = [load_kernels(measured)]
    for device in devices:
        runs = load_results(device, results)
        if runs.empty:
            raise RooflensError(f"no results stored for device '{device}' under {results}")
        tables.append(kernel_rows(as_run(runs)))
    return pd.concat(tables, ignore_index=True)
