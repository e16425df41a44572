"""The validation suite: kernel shapes taken from the models' own operator tables.

Each row is one kernel call in the CSV contract of DESIGN.md (`op` plus shape columns), with the
operator it comes from (`name`, `model`, `tp`, `phase`) and the kernel of kernels/ that runs it
(`kernel`). Shapes come from `model.ops.build_ops` of real scenarios (per-GPU head counts and
GEMM widths at each TP degree), so the suite measures exactly what the cost model prices.

`full_suite`: Llama-3-8B and Llama-2-70B at TP 1/4/8; prefill of 128…16k tokens; decode at
batch 1…256 over KV lengths 1k…128k (rows whose tensors exceed a memory budget are dropped);
weight-only int8/int4 variants of the decode GEMMs. `gpu_quick_suite`: a minute's worth of
those. `cpu_suite`: a few fp32 shapes (the dtype CPUs run natively) that time in seconds.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from rooflens.model.ops.op import Op
from rooflens.model.ops.table import build_ops
from rooflens.model.predict.api import make_scenario

FULL_MODELS = ("llama-3-8b", "llama-2-70b")
FULL_TP = (1, 4, 8)
PREFILL_TOKENS = (128, 512, 2048, 8192, 16384)
DECODE_BATCHES = (1, 8, 32, 128, 256)
DECODE_KV = (1024, 4096, 16384, 131072)
GEMM_NAMES = ("attn.qkv_proj", "attn.o_proj", "mlp.up_gate", "mlp.down", "lm_head")
KERNEL_FOR_WEIGHT = {"bf16": "gemm", "fp16": "gemm", "fp32": "gemm", "int8": "w8a16_gemm",
                     "int4": "w4a16_gemm"}  # fmt: skip
SHAPE_COLUMNS = ("m", "n", "k", "batch", "seq_len", "kv_len", "n_heads", "n_kv_heads",
                 "head_dim", "rows", "hidden", "residual")  # fmt: skip


def _rows_from_ops(ops: Iterable[Op], meta: dict[str, object], weight_dtype: str) -> list[dict]:
    rows: list[dict] = []
    for op in ops:
        s = op.shape
        base = {**meta, "name": op.name}
        if op.kind == "gemm" and op.name in GEMM_NAMES:
            rows.append({**base, "op": "gemm", "kernel": KERNEL_FOR_WEIGHT[weight_dtype],
                         "m": s["m"], "n": s["n"], "k": s["k"], "weight_dtype": weight_dtype,
                         "group_size": 128})  # fmt: skip
        elif op.kind == "attention":
            heads = {"batch": s["batch"], "n_heads": s["n_heads"], "n_kv_heads": s["n_kv_heads"],
                     "head_dim": s["head_dim"]}  # fmt: skip
            if meta["phase"] == "prefill":
                rows.append({**base, "op": "attention_prefill", "kernel": "flash_attention",
                             "seq_len": s["kv_len"], **heads})  # fmt: skip
            else:
                for kernel in ("decode_attention", "paged_decode_attention"):
                    rows.append({**base, "op": "attention_decode", "kernel": kernel,
                                 "kv_len": s["kv_len"], **heads})  # fmt: skip
        elif op.name == "norm.attn":  # fused add + RMSNorm over the step's B·T tokens
            rows.append({**base, "op": "norm", "kernel": "rmsnorm", "rows": meta["tokens"],
                         "hidden": meta["d_model"], "residual": 1, "norm": "rmsnorm"})  # fmt: skip
    return rows


def scenario_rows(model: str, tp: int, phase: str, batch: int, tokens: int, kv_len: int,
                  weight_dtype: str = "bf16", dtype: str = "bf16") -> list[dict]:  # fmt: skip
    """Kernel rows of one step of `model` at TP `tp` (one layer's operators, plus lm_head)."""
    sc = make_scenario(model, "a100-sxm-80gb", tp=tp, weight_dtype=weight_dtype, act_dtype=dtype)
    T = float(tokens) if phase == "prefill" else 1.0
    ops = build_ops(sc, phase, float(batch), T, float(kv_len))
    meta = {"model": model, "tp": tp, "phase": phase, "d_model": sc.model.d_model,
            "tokens": batch * T}  # fmt: skip
    rows = _rows_from_ops(ops, meta, weight_dtype)
    for row in rows:
        row["dtype"] = dtype
        row["kv_dtype"] = dtype if row["op"].startswith("attention") else None
    return rows


def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows).drop(columns=["d_model", "tokens"], errors="ignore")
    for column in SHAPE_COLUMNS:
        if column in frame.columns:
            frame[column] = pd.to_numeric(frame[column]).astype("Int64")
    keys = [c for c in ("kernel", "op", *SHAPE_COLUMNS, "dtype", "weight_dtype") if c in frame]
    return frame.drop_duplicates(subset=keys).reset_index(drop=True)


def working_set_bytes(frame: pd.DataFrame) -> pd.Series:
    """Bytes of the tensors a row allocates (inputs and outputs at 2 bytes per element)."""
    f = pd.DataFrame({c: pd.to_numeric(frame.get(c, 0), errors="coerce") for c in SHAPE_COLUMNS})
    f = f.fillna(0.0).astype(float)
    gemm = f.m * f.k + f.n * f.k + f.m * f.n
    attn = f.batch * (f.seq_len + f.kv_len) * 2 * (f.n_heads + f.n_kv_heads) * f.head_dim
    return 2.0 * (gemm + attn + 4 * f.rows * f.hidden)


def full_suite(memory_budget_bytes: float = 8e9) -> pd.DataFrame:
    """The GPU suite (bf16), rows over the memory budget dropped."""
    rows: list[dict] = []
    for model in FULL_MODELS:
        for tp in FULL_TP:
            for tokens in PREFILL_TOKENS:
                rows += scenario_rows(model, tp, "prefill", 1, tokens, tokens)
            for batch in DECODE_BATCHES:
                for kv in DECODE_KV:
                    rows += scenario_rows(model, tp, "decode", batch, 1, kv)
                for weight in ("int8", "int4"):
                    rows += [r for r in scenario_rows(model, tp, "decode", batch, 1, 1024, weight)
                             if r["op"] == "gemm"]  # fmt: skip
    frame = _frame(rows)
    return frame[working_set_bytes(frame) <= memory_budget_bytes].reset_index(drop=True)


def gpu_quick_suite() -> pd.DataFrame:
    """A minute on a GPU: Llama-3-8B at TP 1, a few prefill and decode shapes per kernel."""
    rows: list[dict] = []
    for tokens in (512, 4096):
        rows += scenario_rows("llama-3-8b", 1, "prefill", 1, tokens, tokens)
    for batch in (1, 64):
        rows += scenario_rows("llama-3-8b", 1, "decode", batch, 1, 4096)
        rows += [r for r in scenario_rows("llama-3-8b", 1, "decode", batch, 1, 4096, "int4")
                 if r["op"] == "gemm"]  # fmt: skip
    return _frame(rows)


def with_fp8_gemm(suite: pd.DataFrame) -> pd.DataFrame:
    """The suite plus each 16-bit GEMM row again as a W8A8 FP8 GEMM (`dtype` and `weight_dtype`
    fp8, kernel `fp8_gemm`: the torch baseline alone, cuBLASLt's FP8 GEMM), for GPUs with FP8
    tensor cores (compute capability 8.9 and newer). A held-out check of the FP8 GEMM pricing
    on whatever GPU the suite runs on (issue 23: FP8 predicted 25-40 % fast on unseen GPUs)."""
    gemm = suite[suite["op"].eq("gemm") & suite["kernel"].eq("gemm")]
    fp8 = gemm.assign(kernel="fp8_gemm", dtype="fp8", weight_dtype="fp8")
    if "group_size" in fp8.columns:
        fp8 = fp8.assign(group_size=None)
    return pd.concat([suite, fp8], ignore_index=True)


def with_fp8_kv(suite: pd.DataFrame) -> pd.DataFrame:
    """The suite plus each decode-attention row again over an fp8 KV cache (`kv_dtype` fp8), for
    GPUs that convert fp8 in hardware (compute capability 8.9 and newer)."""
    decode = suite[suite["op"].eq("attention_decode")].assign(kv_dtype="fp8")
    return pd.concat([suite, decode], ignore_index=True)


def cpu_suite() -> pd.DataFrame:
    """fp32 shapes for a CPU, each a few ms: compute-bound GEMMs at prefill sizes, attention,
    a memory-bound decode GEMV (weights far past the caches) and a fused add+RMSNorm."""
    rows: list[dict] = [
        {"op": "gemm", "m": m, "n": n, "k": k, "phase": "prefill" if m > 1 else "decode"}
        for m, n, k in ((256, 1024, 1024), (512, 512, 512), (128, 2048, 1024), (1, 4096, 4096))
    ]
    for row in rows:
        row.update(kernel="gemm", name="gemm", dtype="fp32")
    rows.append({"op": "attention_prefill", "kernel": "flash_attention", "name": "attn.core",
                 "batch": 1, "seq_len": 512, "n_heads": 8, "n_kv_heads": 2, "head_dim": 64,
                 "dtype": "fp32", "kv_dtype": "fp32", "phase": "prefill"})  # fmt: skip
    rows.append({"op": "norm", "kernel": "rmsnorm", "name": "norm.attn", "rows": 512,
                 "hidden": 4096, "residual": 1, "norm": "rmsnorm", "dtype": "fp32",
                 "phase": "prefill"})  # fmt: skip
    return _frame(rows)
