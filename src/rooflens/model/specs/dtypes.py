"""Storage dtypes, their bytes per element (block scales included), and which tensor-core unit a
(weight, activation) pair computes on.

Block-scaled 4-bit floats store e2m1 elements (4 bits: 1 sign, 2 exponent, 1 mantissa) and one
shared scale per block of consecutive elements; the block is part of the format, so its scale is
charged in the bytes per element here:
- NVFP4: 16-element blocks with an fp8 (e4m3) scale, plus one fp32 scale per tensor: 4 + 8/16 =
  4.5 bits per element + 4 bytes per tensor (NVIDIA, "Introducing NVFP4 for efficient and
  accurate low-precision inference", developer blog, June 2025).
- MXFP4: 32-element blocks with an e8m0 (power-of-two, 1 byte) scale: 4 + 8/32 = 4.25 bits per
  element (OCP Microscaling Formats (MX) Specification v1.0, 2023, table 1).
Integer formats (int8, int4, nf4) take a group size chosen by the quantizer, so their fp16 group
scales are charged separately (model/ops/op.py weight_storage_bytes).
"""

from __future__ import annotations

from collections.abc import Container

from rooflens.hardware.errors import RooflensError

# (elements per block, bytes per block scale) of the block-scaled formats.
BLOCK_SCALES: dict[str, tuple[int, float]] = {"nvfp4": (16, 1.0), "mxfp4": (32, 1.0)}
# Bytes of the per-tensor scale a format adds on top of its block scales (NVFP4's fp32).
TENSOR_SCALE_BYTES: dict[str, float] = {"nvfp4": 4.0}
FP4_DTYPES = tuple(BLOCK_SCALES)

# Bytes per stored element. int4/nf4 pack two per byte; their group scales are charged separately.
BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "nf4": 0.5,
    **{fmt: 0.5 + scale / block for fmt, (block, scale) in BLOCK_SCALES.items()},
}
STORAGE_DTYPES = tuple(BYTES_PER_ELEMENT)
# W4A4 with FP4 activations needs FP4 tensor cores (Blackwell), W8A8-FP8 FP8 ones (Ada on):
# model/predict/scenario.py refuses them elsewhere.
ACTIVATION_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8", *FP4_DTYPES)
# Formats whose weights are widened to the activation dtype on CUDA cores before a 16-bit or
# fp8 matmul (weight-only quantization).
NARROW_WEIGHT_DTYPES = ("int8", "int4", "nf4", "fp8", *FP4_DTYPES)


UNQUANTIZED_DTYPES = ("bf16", "fp16", "fp32")  # activations an unquantized matmul runs at


def unquantized(act_dtype: str) -> str:
    """The dtype a matmul no scheme quantizes runs at beside these activations: theirs when
    16- or 32-bit, else bf16 (MLA's absorbed bmm, the vision encoder's attention)."""
    return act_dtype if act_dtype in UNQUANTIZED_DTYPES else "bf16"


def dtype_bytes(dtype: str) -> float:
    """Bytes per stored element, a block-scaled format's block scale included."""
    try:
        return BYTES_PER_ELEMENT[dtype]
    except KeyError:
        raise RooflensError(
            f"unknown dtype '{dtype}': use one of {', '.join(STORAGE_DTYPES)}"
        ) from None


def tensor_scale_bytes(dtype: str) -> float:
    """Bytes a whole tensor adds at this dtype beyond its elements (NVFP4's fp32 scale)."""
    return TENSOR_SCALE_BYTES.get(dtype, 0.0)


def compute_dtype(weight_dtype: str, act_dtype: str) -> str:
    """The tensor-core unit a matmul of these operands runs on.

    Weight-only quantization (W4A16, W8A16, nf4, NVFP4/MXFP4 weights with 16-bit activations)
    dequantizes to the activation dtype, so the product runs on the 16-bit unit; W8A8 runs on
    int8, FP8 x FP8 (or FP8 x FP4, Blackwell's f8f6f4 MMA) on the fp8 unit, and FP4 x FP4 on the
    fp4 unit; a wider operand wins otherwise (fp32 activations force the fp32/tf32 path).
    """
    dtype_bytes(weight_dtype)
    dtype_bytes(act_dtype)
    if act_dtype == "fp32" or weight_dtype == "fp32":
        return "fp32"
    if act_dtype in ("bf16", "fp16"):
        return act_dtype
    if act_dtype in FP4_DTYPES:
        if weight_dtype in FP4_DTYPES:
            return "fp4"
        return "fp8" if weight_dtype in ("fp8", "int4", "nf4") else "bf16"
    if act_dtype == "fp8" and weight_dtype in ("fp8", "int4", "nf4", *FP4_DTYPES):
        return "fp8"
    if act_dtype == "int8" and weight_dtype in ("int8", "int4"):
        return "int8"
    return "bf16" if act_dtype in ("fp8", "int8") else act_dtype


def default_act_dtype(weight_dtype: str, gpu_units: Container[str]) -> str:
    """Activations a serving engine pairs with these weights on a GPU with these tensor-core
    units: fp8 with fp8 weights where the part has fp8 units (W8A8, as DeepSeek-V3 is served),
    else bf16 (weight-only dequantization for every narrower format)."""
    return "fp8" if weight_dtype == "fp8" and "fp8" in gpu_units else "bf16"
