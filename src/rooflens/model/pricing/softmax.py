"""The softmax of a prefill attention kernel: SM cycles per scored query-key pair.

A FlashAttention kernel runs two MMAs per scored pair (QKᵀ and PV, 4 · head_dim FLOPs on the
tensor cores) and, between them, the pair's softmax: one exponential on the special-function
units (hardware/spec.py EXP_PER_SM_CYCLE: 16 per SM per clock; Blackwell Ultra issues twice as
many, NVIDIA Technical Blog, "Making Softmax More Efficient with NVIDIA Blackwell Ultra") and a
few FP32 operations (scale, running max, sum). That work does not shrink with the head
dimension, so it weighs twice as much at head_dim 64 as at 128: FlashAttention-3 (Shah et al.
2024, §3.1) gives the H100 SXM5 989 TFLOP/s of FP16 matmul against 3.9 TFLOP/s of
exponentials. The engine tables show it: at 4k+ tokens the best prefill kernel reaches 0.45 of
the bf16 peak at head_dim 64 and 0.59 at 128 on the H100 (0.39 / 0.62 on the B300, 0.52 / 0.70
on the RTX PRO 6000), where a roofline of FLOPs alone prices both alike.

Pricing charges `softmax_cycles` SM cycles per scored pair (at 16 exponentials per clock; an SM
that issues more takes proportionally fewer), spread over the SMs at the boost clock, as
CUDA-core work beside the MMAs (model/pricing/roofline.py busy_s adds an attention op's vector
work to its compute roof). The pairs are the op's FLOPs over 4 · head_dim: exact for
multi-head, grouped-query and vision attention and MLA prefill; absorbed MLA decode states its
latent width as head_dim, which counts 0.94 of its pairs at DeepSeek-V3's dims (decode kinds do
not fit this term). `ideal` charges nothing: the roofline of FLOPs and bytes.
"""

from __future__ import annotations

import numpy as np

from rooflens.hardware.spec import EXP_PER_SM_CYCLE, GPUSpec
from rooflens.model.ops.op import Num, Op


def softmax_s(op: Op, cycles_per_pair: float, gpu: GPUSpec) -> Num:
    """Seconds of one call's softmax: `cycles_per_pair` SM cycles per scored pair on an SM that
    issues EXP_PER_SM_CYCLE exponentials a clock (fewer on one that issues more: Blackwell
    Ultra's doubled rate halves it), over the GPU's SMs at its clock (GPUSpec.clock_hz); 0 for
    ops that are not attention or state no head_dim, and without the term."""
    head_dim = op.shape.get("head_dim")
    if not cycles_per_pair or op.kind != "attention" or head_dim is None:
        return 0.0
    width = np.asarray(head_dim, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        pairs = np.where(width > 0, np.asarray(op.flops, dtype=np.float64) / (4.0 * width), 0.0)
    cycles = pairs * cycles_per_pair * EXP_PER_SM_CYCLE / gpu.exp_rate()
    out = cycles / (gpu.sm_count * gpu.clock_hz())
    return float(out) if np.ndim(out) == 0 else out
