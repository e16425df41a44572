"""One operator instance (`Op`) and the GEMM constructor: FLOPs and bytes split by tensor kind
(weights, activations, KV cache), the unit it computes on, and its shape (DESIGN.md step 1).

FLOPs count 2 per multiply-add; bytes are minimum HBM traffic: each operand read once, each
result written once. Quantities may be numpy arrays (grids of configurations).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from model.dtypes import NARROW_WEIGHT_DTYPES, compute_dtype, dtype_bytes, tensor_scale_bytes

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
) -> Op:
    """Y[M,N] = X[M,K] · W[N,K]ᵀ: 2MNK FLOPs; reads W once and X once, writes Y once."""
    ab = dtype_bytes(act_dtype)
    act = (M * K + M * N) * ab
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
        shape={"m": M, "n": N, "k": K},
        vector_flops=dequant_vector_flops(M, N, K, weight_dtype, act_dtype),
    )
