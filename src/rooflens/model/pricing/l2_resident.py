"""A benchmark's call that finds what it re-reads in L2 (model/pricing/roofline.py prices it).

A benchmark times a kernel by replaying it. Where what each replay reads again (a GEMM's
weights, attention's KV cache) fits in L2 with every copy the benchmark cycles through (copies ×
bytes ≤ L2), every replay after the first reads it from L2, not DRAM. aiconfigurator's GEMM
collectors cycle 6 weight copies (SGLang; vLLM's bf16 and FP8), 1 (vLLM's NVFP4), or min(5,
⌈L2 / weight bytes⌉) (TensorRT-LLM, which asks the device for its L2 size); its attention
collectors replay one call over one cache. The loader states the copies per row
(validate/aiconfigurator.py, column `replay_copies`). The RTX PRO 6000 (128 MiB of L2 beside
1.6 TB/s of GDDR7) follows the rule to the byte:

    bf16 GEMM, m = 1   weights   SGLang (6 copies)       TensorRT-LLM (copies)
    4096 × 2048        16.8 MB    6.7 µs  resident        7.1 µs  resident (5: 84 MB)
    3072 × 4096        25.2 MB   23.6 µs  151 MB: cold   10.0 µs  resident (5: 126 MB)
    4096 × 8192        67.1 MB   47.5 µs  403 MB: cold   21.4 µs  resident (2: 134.2 MB, the L2)

    decode attention (TensorRT-LLM, 32 x 8 heads, bf16 cache)   KV read    time     rate
    batch 8, 4,096 cached tokens                                134.2 MB    44 µs   3.1 TB/s
    batch 8, 8,192                                              268.4 MB   191 µs   1.4 TB/s

A resident call reads those bytes at the rate the SMs pull from L2, SMs × clock ×
l2_bytes_per_sm_cycle (fitted), where that beats the DRAM roof; the rest of its bytes stream as
before. On the GPUs whose DRAM is fast beside their SMs (the A100, H100 and B300 at the same
shapes) it does not, and nothing changes. A deployment's step reads every layer's weights once,
and its KV cache beside them, far more than any L2 holds: the operator table states no copies,
and its calls are priced cold.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from rooflens.hardware.profiles import KindEfficiency
from rooflens.hardware.spec import GPUSpec
from rooflens.model.ops.op import Num, Op

REPLAY_COPIES = "replay_copies"  # the shape key, and the kernel table's column
RESIDENT_KINDS = ("gemm", "attention")  # what they re-read: weights, the KV cache read


def replayed(op: Op, copies: Num | None) -> Op:
    """`op` as a benchmark replays it over `copies` copies of what it re-reads (None: as a
    deployment runs it, cold)."""
    if copies is None or op.kind not in RESIDENT_KINDS:
        return op
    return replace(op, shape={**op.shape, REPLAY_COPIES: copies})


def reread_bytes(op: Op) -> Num:
    """What each replay of `op` reads again: a GEMM's weights, attention's KV-cache read."""
    if op.kind == "attention":
        return op.shape.get("kv_read_bytes", op.kv_bytes)
    return op.weight_bytes


def fits_l2(copies: Num, reread: Num, gpu: GPUSpec) -> np.ndarray:
    """Whether a harness cycling `copies` copies of `reread` bytes keeps them all in the GPU's L2
    (copies × bytes ≤ L2; False where the copies are not known, NaN)."""
    with np.errstate(invalid="ignore"):
        return np.asarray(copies, dtype=np.float64) * reread <= gpu.l2_bytes


def memory_s(op: Op, eff: KindEfficiency, gpu: GPUSpec, bandwidth: Num) -> Num:
    """The call's bytes over `bandwidth` (bytes/s), what it re-reads at the SMs' L2 rate instead
    where its harness keeps that in L2 (copies × bytes ≤ L2: TensorRT-LLM's two copies of 67.1
    MB of weights fill the RTX PRO 6000's 134.2 MB to the byte and run resident) and that rate is
    the higher. The rest streams as before: a GEMM's activations at large m are most of its
    bytes."""
    cold = op.bytes / bandwidth
    copies = op.shape.get(REPLAY_COPIES)
    if copies is None or eff.l2_bytes_per_sm_cycle <= 0:
        return cold
    rate = gpu.sm_count * gpu.clock_hz() * eff.l2_bytes_per_sm_cycle
    again = reread_bytes(op)
    fits = fits_l2(copies, again, gpu)  # NaN copies: a row that states none, priced cold
    saved = again / bandwidth - again / np.maximum(bandwidth, rate)
    return cold - np.where(fits, saved, 0.0)
