"""Shared arithmetic for optimizations that act on the linear-layer weights (quantization,
2:4 sparsity, activation sparsity, offload): which operators hold quantizable weights, how many
weight elements an operator reads, and the linear weights each GPU stores.

The split follows model/predict/memory.py: linear layers are stored at the weight dtype (plus one
fp16
scale per group when integer-quantized, model/ops/table.py weight_storage_bytes); embeddings,
lm_head
and norms stay 16-bit, as quantizers leave them (GPTQ, AWQ and bitsandbytes skip them).
"""

from __future__ import annotations

from rooflens.model.ops.op import SCALE_BYTES, Num, Op
from rooflens.model.predict.memory import linear_params_per_gpu
from rooflens.model.predict.scenario import Scenario
from rooflens.model.specs.dtypes import dtype_bytes

QUANTIZED_STORAGE = ("int8", "int4", "nf4")


def is_linear(op: Op) -> bool:
    """A GEMM whose weights are a linear layer stored at the weight dtype (not lm_head)."""
    return op.kind == "gemm" and op.name != "lm_head"


def bytes_per_weight(weight_dtype: str, group_size: int) -> float:
    """Stored bytes per weight element, the group's fp16 scale included (ops.py convention)."""
    scale = SCALE_BYTES / group_size if weight_dtype in QUANTIZED_STORAGE else 0.0
    return dtype_bytes(weight_dtype) + scale


def weight_elements(op: Op, sc: Scenario) -> Num:
    """Weight elements a linear op reads: N·K for a GEMM, else recovered from its bytes."""
    if "n" in op.shape and "k" in op.shape:
        return op.shape["n"] * op.shape["k"] * (op.weight_bytes > 0)
    p = sc.precision
    return op.weight_bytes / bytes_per_weight(p.weight_dtype, p.weight_group_size)


def linear_weight_elements_per_gpu(sc: Scenario) -> float:
    """Linear-layer weight elements one GPU stores (TP split with its replicated tensors, EP's
    share of the experts, one PP stage), as model/predict/memory.py counts them."""
    return linear_params_per_gpu(sc) / sc.parallel.pp
