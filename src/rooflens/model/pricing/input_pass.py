"""A quantized GEMM's own pass over its input (model/pricing/roofline.py's P): the dynamic
activation quantization an engine runs as a kernel before the GEMM. Its terms are fitted per
engine and kernel family (hardware/profiles.py `input_pass_bytes`, `input_pass_row_cycles`;
validate/fit_terms.py says which families fit them and what the tables show)."""

from __future__ import annotations

import numpy as np

from rooflens.hardware.profiles import COPY_FRACTION, KindEfficiency
from rooflens.hardware.spec import GPUSpec
from rooflens.model.ops.op import Num, Op


def input_pass_s(op: Op, eff: KindEfficiency, gpu: GPUSpec) -> Num:
    """The engine's own pass over a quantized GEMM's input before it (dynamic activation
    quantization: vLLM's scaled_fp8_quant reads the 16-bit activations for their amax, then
    reads them again and writes FP8; TensorRT-LLM's quantize op likewise), a kernel of its own
    that does not overlap the GEMM: input_pass_bytes per input element at a device copy's rate
    (COPY_FRACTION; at the GEMM's memory fraction, fits bent it to price the pass: vLLM's B300
    FP8 GEMVs at 0.36 of HBM), plus input_pass_row_cycles per row (vLLM's per-tensor amax takes
    one atomic max per row on one address, serialized: 122 µs at m = 16,384 on the H100, where
    SGLang's takes 13; TensorRT-LLM's block-FP8 pass on the RTX PRO 6000 pays 16 ns a row too).
    Zero under `ideal` (a fused quantization moves nothing)."""
    if not _has_pass(op, eff):
        return 0.0
    elements = _rows(op) * op.shape["k"]
    stream_s = elements * eff.input_pass_bytes / (gpu.hbm_bytes_per_s * COPY_FRACTION)
    return stream_s + serialized_rows_s(op, eff, gpu)


def serialized_rows_s(op: Op, eff: KindEfficiency, gpu: GPUSpec) -> Num:
    """The pass's serialized share: input_pass_row_cycles per input row at the GPU's clock (zero
    where the op has no pass)."""
    if not _has_pass(op, eff):
        return 0.0
    return _rows(op) * eff.input_pass_row_cycles / gpu.clock_hz()


def _has_pass(op: Op, eff: KindEfficiency) -> bool:
    return bool(eff.input_pass_bytes) and op.kind == "gemm" and "k" in op.shape


def _rows(op: Op) -> np.ndarray:
    return np.asarray(op.shape["m"], float) * op.shape.get("heads", 1)
