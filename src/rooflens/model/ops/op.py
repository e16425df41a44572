"""One operator instance (`Op`) and the constructors of the kernels that are not attention or
MoE (GEMM, norm, elementwise, embedding, collective): FLOPs and bytes split by tensor kind
(weights, activations, KV cache), the unit it computes on, its shape, and the kernel call it
stands for in the columns of `rooflens kernels predict` (DESIGN.md step 1 and contract).

FLOPs count 2 per multiply-add; bytes are minimum HBM traffic: each operand read once, each
result written once. Quantities may be numpy arrays (grids of configurations).

Every constructor fills `Op.call`; model/pricing/kernel_table.py builds the Op of a call with the
same
constructor, so re-pricing any row of the operator table from its call gives the same seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from rooflens.model.specs.dtypes import (
    NARROW_WEIGHT_DTYPES,
    compute_dtype,
    dtype_bytes,
    tensor_scale_bytes,
)
from rooflens.model.specs.quant import PLAIN_FAMILIES, family_of

Num = float | npt.NDArray[np.float64]
SCALE_BYTES = 2.0  # one fp16 scale per group of quantized weights (GPTQ/AWQ layout)


@dataclass(frozen=True)
class Op:
    """One operator instance of a step. Quantities are per instance; multiply by `count`."""

    name: str  # stable id shared with validate/, e.g. "attn.qkv_proj"
    phase: str  # "prefill" | "decode" (or an optimization's own phase name)
    kind: str  # "gemm" | "attention" | "elementwise" | "norm" | "embedding" | "comm"
    count: int
    flops: Num
    weight_bytes: Num
    act_bytes: Num
    kv_bytes: Num
    compute_dtype: str
    comm_bytes: Num = 0.0
    live_bytes: Num = 0.0  # activation bytes alive while it runs (inputs, outputs, workspace)
    shape: dict[str, Any] = field(default_factory=dict)  # e.g. m, n, k for a GEMM
    # CUDA-core work overlapping the tensor-core work of the same kernel (weight dequantization,
    # fused epilogues), priced at the fp32 non-tensor peak; not part of `flops`.
    vector_flops: Num = 0.0
    # Share of HBM bandwidth the kernel can reach (< 1 when it launches fewer blocks than SMs).
    bandwidth_fraction: Num = 1.0
    # The kernel call in the `kernels predict` columns (`op` plus its shape and dtypes). A
    # transform that changes the kernel itself (e.g. fusion, sparsity) keeps the call of the
    # kernel it started from; the default stack's calls re-price to the row's own seconds.
    call: dict[str, Any] = field(default_factory=dict)

    @property
    def bytes(self) -> Num:
        return self.weight_bytes + self.act_bytes + self.kv_bytes

    def scaled(self, **factors: float) -> Op:
        """A copy with named quantities multiplied (e.g. scaled(weight_bytes=0.5))."""
        return replace(self, **{k: getattr(self, k) * v for k, v in factors.items()})


def weight_storage_bytes(
    n_params: Num, weight_dtype: str, group_size: int, tensors: float = 1.0
) -> Num:
    """Bytes to store n weights held in `tensors` tensors: packed elements plus one fp16 scale
    per group if integer-quantized; block-scaled formats carry their block scales in
    dtype_bytes and add their per-tensor scale (NVFP4's fp32) once per tensor."""
    scales = n_params / group_size * SCALE_BYTES if weight_dtype in ("int8", "int4", "nf4") else 0.0
    per_tensor = tensors * tensor_scale_bytes(weight_dtype)
    return n_params * dtype_bytes(weight_dtype) + scales + per_tensor


# Weight-only dequantization (W4A16, W8A16, FP4 weights before Blackwell or with 16-bit
# activations): an int/e2m1→float convert and a scale multiply-add per
# weight element, on CUDA cores (Frantar et al. 2024, "MARLIN", §3), redone for every
# activation row tile; Marlin's largest tile is 64 rows (4 × 16-row m-blocks).
DEQUANT_VECTOR_FLOPS_PER_WEIGHT = 2.0
DEQUANT_ROW_TILE = 64.0


def dequant_vector_flops(M: Num, N: Num, K: Num, weight_dtype: str, act_dtype: str) -> Num:
    """CUDA-core work to widen quantized weights to the compute unit's dtype (0 if none)."""
    unit = compute_dtype(weight_dtype, act_dtype)
    narrower = unit != "fp4" and dtype_bytes(weight_dtype) < dtype_bytes(unit)
    if weight_dtype not in NARROW_WEIGHT_DTYPES or not narrower:
        return 0.0 * M
    tiles = np.ceil(np.asarray(M, dtype=np.float64) / DEQUANT_ROW_TILE)
    out = DEQUANT_VECTOR_FLOPS_PER_WEIGHT * N * K * tiles
    return float(out) if np.ndim(out) == 0 else out


# FlashAttention-2 launches one thread block per (sequence, KV head, 128-row query tile) in
# decode-shaped calls (query heads of a GQA group packed into the tile); with fewer blocks than
# SMs the idle SMs issue no loads, so HBM bandwidth scales with occupancy (Dao, Haziza, Massa,
# Sizov 2023, "Flash-Decoding for long-context inference"). Flash-decoding lifts this.


def gemm_op(
    name: str,
    phase: str,
    count: int,
    M: Num,
    N: Num,
    K: Num,
    weight_dtype: str,
    act_dtype: str,
    group_size: int = 128,
    heads: int = 1,
    quant: str | None = None,
) -> Op:
    """Y[M,N] = X[M,K] · W[N,K]ᵀ: 2MNK FLOPs; reads W once and X once, writes Y once.

    `quant` names the kernel family when the operands alone do not (128-block FP8 against
    per-tensor FP8, model/specs/quant.py); the family selects the calibrated terms
    (model/pricing/kinds.py kind_terms).

    `heads` > 1 is a batched GEMM of `heads` products [M, K] · [K, N/heads], each head with its
    own weight and its own input (MLA's absorbed projections): the FLOPs and weights of one
    [M, K] · [K, N] GEMM, but each head reads its own M×K input, heads · M · K elements."""
    ab = dtype_bytes(act_dtype)
    act = (M * K * heads + M * N) * ab
    call = {"op": "gemm", "m": M, "n": N, "k": K, "dtype": act_dtype,
            "weight_dtype": weight_dtype, "group_size": group_size}  # fmt: skip
    if quant:
        call["quant"] = quant
    family = quant or family_of(weight_dtype, act_dtype)
    family = None if family in PLAIN_FAMILIES else family  # 16-bit: the bare kind's terms
    return Op(
        name=name,
        phase=phase,
        kind="gemm",
        count=count,
        flops=2.0 * M * N * K,
        weight_bytes=weight_storage_bytes(N * K, weight_dtype, group_size),
        act_bytes=act,
        kv_bytes=0.0,
        compute_dtype=compute_dtype(weight_dtype, act_dtype),
        live_bytes=act,
        shape={
            "m": M,
            "n": N,
            "k": K,
            **({"heads": heads} if heads > 1 else {}),
            **({"family": family} if family else {}),
        },
        vector_flops=dequant_vector_flops(M, N, K, weight_dtype, act_dtype),
        call={**call, "heads": heads} if heads > 1 else call,
    )


NORM_WEIGHT_BYTES = 2.0  # norm weights (and LayerNorm's bias) stay 16-bit under quantization
EMBED_WEIGHT_BYTES = 2.0  # embedding rows are read in 16 bits


def memory_op(name: str, phase: str, kind: str, count: int, flops: Num, act_bytes: Num,
              weight_bytes: Num, call: dict[str, Any], eager: bool = False) -> Op:  # fmt: skip
    """A CUDA-core kernel that streams activations (norm, elementwise, embedding). `eager`: the
    call is PyTorch's own unfused kernel (a harness that times torch ops one by one, such as
    Vidur's profiler), whose speed tracks the SMs' clock, not HBM (model/pricing/roofline.py)."""
    if eager:
        call = {**call, "eager": 1}
    return Op(name=name, phase=phase, kind=kind, count=count, flops=flops,
              weight_bytes=weight_bytes, act_bytes=act_bytes, kv_bytes=0.0 * act_bytes,
              compute_dtype="fp32", live_bytes=act_bytes, call=call,
              shape={"eager": True} if eager else {})  # fmt: skip


# A norm program's threads scale with its row up to a full block: kernels/rmsnorm.py launches
# hidden / 256 warps (16 from 4096 on), vLLM's rms_norm min(hidden, 1024) threads. Narrower rows
# take a share of an SM's thread slots, so more of them are resident at once; per-head q/k norms
# (64–256 wide) run one warp per head, many heads per block (TensorRT-LLM's fusedQKNormRope,
# vLLM's fused_qk_norm_rope). The calibrated wave and occupancy terms count full-width programs.
# An eager PyTorch norm (a harness's unfused torch ops) keeps one program per row.
NORM_FULL_PROGRAM_ELEMENTS = 4096.0
# A full-width program's threads (kernels/rmsnorm.py: 16 warps from 4096 wide on). An SM holds
# as many at once as its thread slots allow (2,048 / 512 = 4 on Ampere, Hopper and Blackwell
# datacenter parts, 3 on compute capability 8.6, 8.9 and 12.0), and they wait on memory
# together: a wave of the grid is that many programs per SM (model/pricing/grid.py
# `resident_programs`).
NORM_PROGRAM_THREADS = 512.0


def norm_programs(rows: Num, hidden: Num) -> Num:
    """The norm's grid in full-width programs: rows × min(1, hidden / 4096) (one program per
    row from 4096 wide on, as the calibrated norms were measured)."""
    return rows * np.minimum(1.0, np.asarray(hidden, dtype=np.float64) / NORM_FULL_PROGRAM_ELEMENTS)


def norm_op(name: str, phase: str, count: int, rows: Num, hidden: Num, act_dtype: str,
            residual: Num = 1.0, norm: str = "rmsnorm", eager: bool = False) -> Op:  # fmt: skip
    """(Fused add +) RMSNorm or LayerNorm of [rows, hidden]: 5 FLOPs per element; reads x (and
    the residual), writes y (and the updated residual), and reads the weight (and bias)."""
    streams = 1.0 + residual
    weights = (2.0 if norm == "layernorm" else 1.0) * hidden * NORM_WEIGHT_BYTES
    act = 2 * streams * rows * hidden * dtype_bytes(act_dtype)
    call = {"op": "norm", "rows": rows, "hidden": hidden, "residual": residual, "norm": norm,
            "dtype": act_dtype}  # fmt: skip
    op = memory_op(name, phase, "norm", count, 5.0 * rows * hidden, act, weights, call, eager)
    # One program per row (vLLM's rms_norm, torch's and the Triton tutorial's kernels): a few
    # rows leave most SMs idle, which the calibrated occupancy term prices
    # (model/pricing/roofline.py).
    # The rows stream; the weight vector is re-read by every program from L2, not throttled.
    shape = {**op.shape, "rows": rows, "hidden": hidden,
             "thread_blocks": rows if eager else norm_programs(rows, hidden),
             **({} if eager else {"program_threads": NORM_PROGRAM_THREADS}),
             "streamed_bytes": act}  # fmt: skip
    return replace(op, shape=shape)


def elementwise_op(
    name: str,
    phase: str,
    count: int,
    elements_read: Num,
    elements_written: Num,
    act_dtype: str,
    flops_per_element: float = 1.0,
    eager: bool = False,
) -> Op:
    """An elementwise kernel (activation, RoPE): reads and writes each element once, and does
    `flops_per_element` FLOPs per element written."""
    act = (elements_read + elements_written) * dtype_bytes(act_dtype)
    flops = flops_per_element * elements_written
    call = {"op": "elementwise", "elements_read": elements_read,
            "elements_written": elements_written, "flops_per_element": flops_per_element,
            "dtype": act_dtype}  # fmt: skip
    return memory_op(name, phase, "elementwise", count, flops, act, 0.0 * act, call, eager)


def embedding_op(name: str, phase: str, count: int, rows: Num, hidden: Num, act_dtype: str,
                 eager: bool = False) -> Op:  # fmt: skip
    """Gather `rows` rows of the embedding table (16-bit) and write [rows, hidden]."""
    act = rows * hidden * dtype_bytes(act_dtype)
    call = {"op": "embedding", "rows": rows, "hidden": hidden, "dtype": act_dtype}
    weights = rows * hidden * EMBED_WEIGHT_BYTES
    return memory_op(name, phase, "embedding", count, 0.0 * rows, act, weights, call, eager)


def comm_op(name: str, phase: str, count: int, collective: str, payload: Num,
            **shape: Any) -> Op:  # fmt: skip
    """A collective of `payload` bytes per GPU (model/pricing/comm.py prices it by `collective` and
    the
    shape: n_gpus, span_gpus, hierarchical)."""
    return Op(
        name=name,
        phase=phase,
        kind="comm",
        count=count,
        flops=0.0,
        weight_bytes=0.0,
        act_bytes=0.0,
        kv_bytes=0.0,
        compute_dtype="fp32",
        comm_bytes=payload,
        live_bytes=payload,
        shape={"collective": collective, **shape},
        call={"op": "comm", "collective": collective, "comm_bytes": payload, **shape},
    )


def kernels_per_call(op: Op) -> Num:
    """Kernel launches one call of `op` makes: one, or two for split-KV attention (its combine
    kernel, model/ops/attention.py), plus one where a serving engine writes the new tokens' K and V
    into its paged cache with a kernel of its own (`kv_write`: vLLM's reshape_and_cache, timed
    inside the engine's attention call). Pricing pays the per-launch floor this many times and
    model/pricing/host.py issues this many launches."""
    return op.shape.get("kernels", 1.0) + op.shape.get("kv_write", 0.0)
