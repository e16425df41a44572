"""Loaders for aiconfigurator's tables of the shared measurements (vLLM, SGLang and
TensorRT-LLM on five GPUs): GEMM, prefill and decode attention, fused MoE and NCCL collectives,
each in the kernel CSV contract (NCCL in its own columns). Units: `latency` is milliseconds per
call (CUDA-graph replay; TensorRT-LLM 1.0's quantized GEMMs are brought to one,
`graph_latency_ms`); GEMM rows that do not time the kernel their precision names are left out
(LEFT_OUT: vLLM's block FP8, timed eagerly; SGLang's `int8_wo`, a W8A8 GEMM behind an eager
quantization), and so are fused-MoE rows timed with a stand-in activation
(LEFT_OUT_MOE_KERNELS). NCCL `message_size` counts elements, not bytes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rooflens.hardware.presets import get_gpu
from rooflens.model.pricing.kernel_columns import map_distinct
from rooflens.model.pricing.l2_resident import REPLAY_COPIES
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

# TensorRT-LLM 1.0's quantized GEMMs on the A100 (W4A16, W8A16, SmoothQuant; `kernel_source`
# trt_flow_...) are not CUDA-graph replays: aiconfigurator's collector (collect_gemm_trt.py) builds
# a TensorRT engine and reads one inference's per-layer time from TensorRT's IProfiler. Each is
# one event pair (all of them lie on its 1.024 us tick; no other table's rows do), and holds the
# host's launch of the layer besides the kernel. GAP_SHAPES bound the calls the gap is read on:
# the smallest, where a GEMM kernel runs at its floor whatever its precision.
TRT_FLOW = "trt_flow_"
GAP_SHAPES = {"m": 16, "n": 512, "k": 512}


# vLLM's block-FP8 GEMMs were timed without a CUDA graph, every other GEMM with one:
# aiconfigurator's collector (collector/vllm/collect_gemm.py) benchmarks with
# `use_cuda_graph=gemm_type != "fp8_block"`, so each row holds vLLM's Python forward and its
# launches. Its maintainers say so and keep these rows (35,742 per GPU at vLLM 0.24.0) out of
# every reuse: on a B200, one call of (m, n, k) = (1, 768, 7168) read 148.6 us eager against
# 12.3 us in a one-op graph (their notes on the B300 vLLM 0.25.0 collection, "Reuse safety for
# historical FP8-block measurements", citing ai-dynamo/aisimulate PR 219). The tables agree: on
# the H100 they sit on flat 60 us (FlashInfer) and 90 us (DeepGEMM) floors from m = 1 to
# m = 4,096 where SGLang's graph-timed DeepGEMM runs the same shapes in 10-100 us. A server
# replays its decode steps in CUDA graphs, so these rows are not what a deployment runs and are
# not loaded; vLLM's block FP8 is priced by the engines' graph-timed block-FP8 kernels.
# SGLang's `int8_wo` rows (the H100's SGLang 0.5.6.post2 table, collected 2025-12-21) are not a
# weight-only GEMM: the collector of that time (collector/sglang/collect_gemm.py from aiconfigurator
# commit 80689a30, 2025-11-05, until 97faa88f dropped the dtype, 2026-01-05) quantizes activations
# per token in eager PyTorch (cast to fp32, abs, max, clamp, divide, divide, round, clamp, cast:
# nine kernels under the graph) and then runs sgl_kernel's W8A8 `int8_scaled_mm`. The table shows
# the chain: 21 us at its smallest shapes, where its bf16 GEMM takes 3.0 and its per-tensor FP8
# GEMM, with its own one-kernel quantization, 5.6. No engine serves W8A16 that way; fitted, the
# rows priced every engine's W8A16 decode on the H100 and H200 above bf16's. W8A16 is priced by
# the one dense weight-only kernel the tables hold, TensorRT-LLM's WeightOnlyQuantMatmul.
LEFT_OUT = (("VLLM", "fp8_block"), ("SGLANG", "int8_wo"))  # (framework, gemm_dtype), as written
# Fused-MoE rows whose kernel ran a stand-in activation: Kimi-K3's MXFP4 experts use SiTU, which
# stock vLLM 0.24.0 and SGLang 0.5.14 have no path for, so the collector timed their Marlin kernel
# with SiLU in its place (`*_situ_as_silu`; the H100's and the RTX PRO 6000's moe collection_meta:
# "owner-approved situ-as-silu Marlin approximation", "until the sglang collector learns the
# checkpoint's situ property"). No deployment runs that kernel. Kept, the rows made one kernel
# family of two: the H100 engines' MXFP4 terms, fitted on them and on gpt-oss's own Triton
# kernels, priced SGLang's gpt-oss-120b experts at 0.45-0.59x their table at 8-1,024 tokens and
# vLLM's at 1.4-2.2x at 256-4,096. The B300's Kimi-K3 rows ran SiTU itself (vLLM's Kimi-K3
# preview build) and stay.
LEFT_OUT_MOE_KERNELS = ("_situ_as_silu",)  # kernel_source suffixes


# The weight copies each collector cycles through between replays of one GEMM (the
# collector/<engine>/collect_gemm.py of aiconfigurator-core 0.12.0): a call whose copies fit in L2
# reads its weights from there (model/pricing/l2_resident.py, with what the tables show). SGLang
# and vLLM take 6 (vLLM 1 for NVFP4); TensorRT-LLM max(1, min(5, ceil(L2 / weight bytes))), its
# weight bytes 2, 1, 1 and 0.5 per element for bf16, FP8, block FP8 and NVFP4. TensorRT-LLM 1.0's
# profiler-timed quantized GEMMs (TRT_FLOW) state none: priced cold. Every attention collector
# replays one call over one KV cache: 1 copy (ATTENTION_COPIES).
COPIES = {"sglang": 6, "vllm": 6}
ONE_COPY = {"vllm": ("nvfp4",)}
TRTLLM_MAX_COPIES = 5
TRTLLM_WEIGHT_BYTES = {"bfloat16": 2.0, "fp8": 1.0, "fp8_block": 1.0, "nvfp4": 0.5}
ATTENTION_COPIES = 1.0


def gemm_copies(d: pd.DataFrame, gpus: pd.Series) -> pd.Series:
    """Each row's weight copies as its collector cycled them (COPIES; NaN where not known)."""
    engine = d["framework"].astype(str).str.lower()
    dtype = d["gemm_dtype"].astype(str)
    copies = map_distinct(engine, COPIES).astype(float)
    for name, dtypes in ONE_COPY.items():
        copies = copies.where(~(engine.eq(name) & dtype.isin(dtypes)), 1.0)
    trt = engine.eq("trtllm") & ~d["kernel_source"].astype(str).str.startswith(TRT_FLOW)
    weight = d["n"] * d["k"] * map_distinct(dtype, TRTLLM_WEIGHT_BYTES)
    l2 = map_distinct(gpus, lambda g: float(get_gpu(str(g)).l2_bytes))
    fitted = np.clip(np.ceil(l2 / weight), 1.0, TRTLLM_MAX_COPIES)
    return copies.where(~trt, fitted)


def graph_latency_ms(d: pd.DataFrame) -> pd.Series:
    """`latency` as a CUDA-graph replay times it. A TensorRT-profiler row loses its table's host
    gap: the median, over GAP_SHAPES, of its SmoothQuant GEMM's time less the same table's
    graph-timed bf16 GEMM at the same shape (a tiny W8A8 GEMM's kernel costs what a tiny bf16
    one does; the A100's TensorRT-LLM 1.0 table: 4.8 us). Other rows, and a table without both,
    are returned as measured."""
    flow = d["kernel_source"].astype(str).str.startswith(TRT_FLOW)
    if not flow.any():
        return d["latency"]
    small = (d[list(GAP_SHAPES)] <= pd.Series(GAP_SHAPES)).all(axis=1)
    key = list(GAP_SHAPES)
    sq = d[flow & small & (d["gemm_dtype"] == "sq")].groupby(key)["latency"].median()
    bf16 = d[~flow & small & (d["gemm_dtype"] == "bfloat16")].groupby(key)["latency"].median()
    gap = (sq - bf16).dropna().median()
    if not gap > 0:
        return d["latency"]
    return d["latency"].where(~flow, d["latency"] - gap)


def load_aiconfigurator_gemm(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """Y[m,n] = X[m,k]·W[n,k]ᵀ per engine (vLLM, SGLang, TensorRT-LLM) and GPU, in every
    precision the engine measured (`quant`; dtype and weight_dtype from ENGINE_PRECISIONS)."""
    frames = []
    for path in sorted(check_root(root).glob("aiconfigurator-*/gemm/*/*/gemm_perf.parquet")):
        d = read_table(path, ("m", "n", "k", "gemm_dtype", *IMPL_COLUMNS))
        if d is None:
            continue
        engine = d["framework"].str.upper()
        left_out = pd.Series(False, index=d.index)
        for name, dtype in LEFT_OUT:
            left_out |= engine.eq(name) & d["gemm_dtype"].eq(dtype)
        d = d[~left_out]
        frame = pd.DataFrame({"op": "gemm", "m": d["m"], "n": d["n"], "k": d["k"]})
        frame = frame.join(engine_precision(d["gemm_dtype"]))
        frame["measured_s"] = graph_latency_ms(d) * MS
        frame["impl"], frame["gpu"] = impl(d), map_distinct(d["device"], gpu_id)
        frame[REPLAY_COPIES] = gemm_copies(d, frame["gpu"])
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
                    "gpu": map_distinct(d["device"], gpu_id),
                    "source": rel(path, root),
                    "kv_write": 1,  # the engine's KV-cache write kernel is in the call
                    REPLAY_COPIES: ATTENTION_COPIES,  # one cache, replayed
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
        d = d[~d["kernel_source"].astype(str).str.endswith(LEFT_OUT_MOE_KERNELS)]
        frame = d[keep].copy()
        frame.insert(0, "op", "moe")
        frame = frame.join(engine_precision(d["moe_dtype"]))
        frame["measured_s"] = d["latency"] * MS
        frame["impl"], frame["gpu"] = impl(d), map_distinct(d["device"], gpu_id)
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
                "gpu": map_distinct(d["device"], gpu_id),
                "source": rel(path, root),
            }
        )
        frames.append(frame)
    return concat(frames)
