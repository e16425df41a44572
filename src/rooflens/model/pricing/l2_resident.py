"""A GEMM whose benchmark finds its weights in L2 (model/pricing/roofline.py prices it).

A benchmark times a GEMM by replaying it many times. It cycles through a few copies of the
weights so that they do not stay in L2, but where the copies, and the call's activations, fit in
L2 anyway, every replay reads its weights from L2. aiconfigurator's collectors, which measured the
engine GEMM tables, take 6 copies (SGLang; vLLM's bf16 and FP8), 1 (vLLM's NVFP4), or
min(5, ⌈L2 / weight bytes⌉) (TensorRT-LLM, which asks the device for its L2 size); the loader
states them per row (validate/aiconfigurator.py `weight_copies`). The tables show the rule to the
byte on the RTX PRO 6000 (128 MiB of L2 beside 1.6 TB/s of GDDR7), bf16 at m = 1:

    n × k          weights   SGLang (6 copies)        TensorRT-LLM (copies)
    4096 × 2048    16.8 MB    6.7 µs  resident         7.1 µs  resident (5: 84 MB)
    3072 × 4096    25.2 MB   23.6 µs  151 MB: cold    10.0 µs  resident (5: 126 MB)
    4096 × 8192    67.1 MB   47.5 µs  403 MB: cold    21.4 µs  resident (2: 134.2 MB, the L2)

A resident call reads its weights at the rate the SMs pull from L2, SMs × clock ×
l2_bytes_per_sm_cycle (fitted), where that beats the DRAM roof; its activations stream as before.
On the GPUs whose DRAM is fast beside their SMs (the A100, H100 and B300 at the same shapes) it
does not, and nothing changes. A deployment's step reads every layer's weights once, far more
than any L2 holds: the operator table states no copies, and its GEMMs are priced cold.
"""

from __future__ import annotations

import numpy as np

from rooflens.hardware.profiles import KindEfficiency
from rooflens.hardware.spec import GPUSpec
from rooflens.model.ops.op import Num, Op

WEIGHT_COPIES = "weight_copies"  # the shape key, and the kernel table's column


def memory_s(op: Op, eff: KindEfficiency, gpu: GPUSpec, bandwidth: Num) -> Num:
    """The call's bytes over `bandwidth` (bytes/s), its weights at the SMs' L2 rate instead
    where its harness keeps them in L2 (copies × weight bytes ≤ L2: TensorRT-LLM's two copies
    of 67.1 MB fill the RTX PRO 6000's 134.2 MB to the byte and run resident) and that rate is
    the higher. Activations stream as before: at large m they are most of the bytes."""
    cold = op.bytes / bandwidth
    copies = op.shape.get(WEIGHT_COPIES)
    if copies is None or eff.l2_bytes_per_sm_cycle <= 0:
        return cold
    rate = gpu.sm_count * gpu.clock_hz() * eff.l2_bytes_per_sm_cycle
    with np.errstate(invalid="ignore"):  # NaN copies: a row that states none, priced cold
        fits = np.asarray(copies, dtype=np.float64) * op.weight_bytes <= gpu.l2_bytes
    saved = op.weight_bytes / bandwidth - op.weight_bytes / np.maximum(bandwidth, rate)
    return cold - np.where(fits, saved, 0.0)
