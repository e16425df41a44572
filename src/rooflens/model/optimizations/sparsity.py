"""`sparsity-2:4`: 2:4 structured weight sparsity on sparse tensor cores.

Mechanism (Mishra et al. 2021, "Accelerating Sparse Deep Neural Networks", NVIDIA). In every
group of 4 consecutive weights along K, 2 are zero. Sparse tensor cores (Ampere and later) skip
the zero half: the sparse peak is GPUSpec.sparsity_2_4_multiplier (2×) times the dense one. The
weights are stored compressed: the kept half of the values plus 2 bits of index metadata per kept
value (cuSPARSELt's format), 1.125 bytes per original fp16 weight instead of 2.

Formulas per linear layer Y[M,N] = X[M,K]·W[N,K]ᵀ on a GPU with multiplier s:
    executed FLOPs = 2MNK / s   (time = 2MNK / (s · dense peak))
    weight bytes   = N·K · (b_w / 2 + 1/8) + the group scales, unchanged
On a GPU without sparse tensor cores (s = 1: V100 among the presets) nothing changes:
dense kernels cannot skip the zeros and read a dense copy of the weights.

Limits: accuracy is not modelled (one-shot 2:4 pruning of LLMs costs perplexity, SparseGPT,
Frantar & Alistarh 2023); lm_head and embeddings stay dense; real sparse kernels reach the 2×
only on large GEMMs, so the compute gain is an upper bound.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from rooflens.model.ops.op import Op
from rooflens.model.optimizations._weights import (
    is_linear,
    linear_weight_elements_per_gpu,
    weight_elements,
)
from rooflens.model.optimizations.base import Optimization
from rooflens.model.predict.steps import MemoryBreakdown, Prediction, Step, StepPricer
from rooflens.model.specs.dtypes import dtype_bytes

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario

METADATA_BYTES_PER_WEIGHT = 2 / 8 / 2  # 2 bits per kept value, half the values kept


def saved_bytes_per_weight(weight_dtype: str) -> float:
    """Bytes saved per original weight: half the values dropped, metadata added."""
    return dtype_bytes(weight_dtype) / 2 - METADATA_BYTES_PER_WEIGHT


class Sparsity24(Optimization):
    name = "sparsity-2:4"
    summary = "2:4 structured weight sparsity: sparse tensor-core peak, half the weight bytes"
    citation = "Mishra et al. 2021, Accelerating Sparse Deep Neural Networks (arXiv:2104.08378)"
    order = 40  # table transform, after quantization set the weight dtype

    def ops(self, ops: list[Op], sc: Scenario, step: Step) -> list[Op]:
        speedup = sc.gpu.sparsity_2_4_multiplier
        if speedup <= 1.0:
            return ops
        saved = saved_bytes_per_weight(sc.precision.weight_dtype)
        return [
            replace(
                op,
                flops=op.flops / speedup,
                vector_flops=op.vector_flops / 2,  # only the kept half is dequantized
                weight_bytes=op.weight_bytes - weight_elements(op, sc) * saved,
            )
            if is_linear(op)
            else op
            for op in ops
        ]

    def memory(self, mem: MemoryBreakdown, sc: Scenario) -> MemoryBreakdown:
        if sc.gpu.sparsity_2_4_multiplier <= 1.0:
            return mem
        saved = linear_weight_elements_per_gpu(sc) * saved_bytes_per_weight(
            sc.precision.weight_dtype
        )
        return replace(mem, weights_bytes=mem.weights_bytes - saved)

    def result(self, pred: Prediction, sc: Scenario, pipeline: StepPricer) -> Prediction:
        if sc.gpu.sparsity_2_4_multiplier > 1.0:
            return pred
        note = f"sparsity-2:4: {sc.gpu.id} has no sparse tensor cores; no change"
        return replace(pred, notes=[*pred.notes, note])
