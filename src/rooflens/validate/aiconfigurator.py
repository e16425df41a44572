"""Loaders for aiconfigurator's tables of the shared measurements (vLLM and SGLang on
A100-SXM4-80GB): GEMM, prefill and decode attention, fused MoE and NCCL collectives, each in
the kernel CSV contract (NCCL in its own columns). Units: `latency` is milliseconds per call
(CUDA-graph replay); NCCL `message_size` counts elements, not bytes.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rooflens.validate.measured_files import (
    DEFAULT_ROOT,
    IMPL_COLUMNS,
    MS,
    check_root,
    concat,
    dtype_names,
    engine_precision,
    gpu_id,
    impl,
    read_table,
    rel,
)
from rooflens.validate.moe_configs import SUBSET_COLUMN, config_labels


def load_aiconfigurator_gemm(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """Y[m,n] = X[m,k]·W[n,k]ᵀ per engine (vLLM, SGLang, TensorRT-LLM) and GPU, in every
    precision the engine measured (`quant`; dtype and weight_dtype from ENGINE_PRECISIONS)."""
    frames = []
    for path in sorted(check_root(root).glob("aiconfigurator-*/gemm/*/*/gemm_perf.parquet")):
        d = read_table(path, ("m", "n", "k", "gemm_dtype", *IMPL_COLUMNS))
        if d is None:
            continue
        frame = pd.DataFrame({"op": "gemm", "m": d["m"], "n": d["n"], "k": d["k"]})
        frame = frame.join(engine_precision(d["gemm_dtype"]))
        frame["measured_s"] = d["latency"] * MS
        frame["impl"], frame["gpu"] = impl(d), d["device"].map(gpu_id)
        frame["source"] = rel(path, root)
        frames.append(frame)
    return concat(frames)


def load_aiconfigurator_attention(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """Causal prefill (`context`) and decode (`generation`) attention, one layer per call.

    Head counts are per GPU. Decode `step` counts tokens already cached, so the kernel reads
    step + 1 positions: kv_len = step + 1 (the contract's convention, new token included).
    `window_size` (sliding-window layers, 30 % of the newer tables' rows) is the contract's
    `window`: such a call attends to at most that many keys.
    """
    frames = []
    for phase in ("context", "generation"):
        pattern = f"aiconfigurator-*/attention/*/*/{phase}_attention_perf.parquet"
        for path in sorted(check_root(root).glob(pattern)):
            d = read_table(path, ("batch_size", "num_heads", "num_key_value_heads", "head_dim",
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
                    "dtype": dtype_names(d["attn_dtype"]),
                    "kv_dtype": dtype_names(d["kv_cache_dtype"]),
                    "measured_s": d["latency"] * MS,
                    "impl": impl(d),
                    "gpu": d["device"].map(gpu_id),
                    "source": rel(path, root),
                    "kv_write": 1,  # the engine's KV-cache write kernel is in the call
                    # sliding-window layers attend to the last `window_size` keys (0: all);
                    # tables without the column measured full attention only
                    "window": d["window_size"].fillna(0).astype(int)
                    if "window_size" in d.columns
                    else 0,
                }
            )
            if phase == "context":
                rows.insert(2, "seq_len", d["isl"])
            else:
                rows.insert(2, "kv_len", d["step"] + 1)
            frames.append(rows)
    return concat(frames)


def load_moe(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """Fused MoE layer times (vLLM fused_moe, bf16) in the kernel contract's `moe` columns
    (num_tokens, hidden_size, inter_size, topk, num_experts, moe_tp_size, moe_ep_size, dtype)
    plus the benchmark's routing `distribution` (power-law token counts per expert, exponent
    1.01 or 1.2; no uniform rows) and `moe_config`: whether vLLM ran a tuned config for the
    shape (validate/moe_configs.py)."""
    frames = []
    for path in sorted(check_root(root).glob("aiconfigurator-*/moe/*/*/moe_perf.parquet")):
        keep = ["num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
                "moe_ep_size", "distribution"]  # fmt: skip
        d = read_table(path, (*keep, "moe_dtype", *IMPL_COLUMNS))
        if d is None:
            continue
        frame = d[keep].copy()
        frame.insert(0, "op", "moe")
        frame = frame.join(engine_precision(d["moe_dtype"]))
        frame["measured_s"] = d["latency"] * MS
        frame["impl"], frame["gpu"] = impl(d), d["device"].map(gpu_id)
        frame["source"] = rel(path, root)
        frame[SUBSET_COLUMN] = config_labels(frame)
        frames.append(frame)
    return concat(frames)


def load_nccl(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """NCCL collectives on A100 (aiconfigurator): `message_bytes` = elements × dtype size."""
    frames = []
    for path in sorted(check_root(root).glob("aiconfigurator-*/comm/nccl/*/nccl_perf.parquet")):
        d = read_table(path, ("op_name", "num_gpus", "message_size", "nccl_dtype", "latency",
                              "version", "device"))  # fmt: skip
        if d is None:
            continue
        dtype = dtype_names(d["nccl_dtype"])
        size = dtype.map({"fp16": 2, "bf16": 2, "fp32": 4, "int8": 1}).astype(float)
        frame = pd.DataFrame(
            {
                "op": d["op_name"],
                "n_gpus": d["num_gpus"],
                "message_bytes": d["message_size"] * size,
                "dtype": dtype,
                "measured_s": d["latency"] * MS,
                "impl": "nccl-" + d["version"],
                "gpu": d["device"].map(gpu_id),
                "source": rel(path, root),
            }
        )
        frames.append(frame)
    return concat(frames)
