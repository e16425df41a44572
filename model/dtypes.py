"""Storage dtypes and which tensor-core unit a (weight, activation) pair computes on."""

from __future__ import annotations

from hardware.errors import RooflensError

# Bytes per stored element. int4/nf4 pack two per byte; scales are charged separately.
BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "nf4": 0.5,
}
STORAGE_DTYPES = tuple(BYTES_PER_ELEMENT)
ACTIVATION_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8")


def dtype_bytes(dtype: str) -> float:
    try:
        return BYTES_PER_ELEMENT[dtype]
    except KeyError:
        raise RooflensError(
            f"unknown dtype '{dtype}': use one of {', '.join(STORAGE_DTYPES)}"
        ) from None


def compute_dtype(weight_dtype: str, act_dtype: str) -> str:
    """The tensor-core unit a matmul of these operands runs on.

    Weight-only quantization (W4A16, W8A16, nf4) dequantizes to the activation dtype, so the
    product runs on the 16-bit unit; W8A8 runs on int8 and FP8 x FP8 on the fp8 unit; a wider
    operand wins otherwise (fp32 activations force the fp32/tf32 path).
    """
    dtype_bytes(weight_dtype)
    dtype_bytes(act_dtype)
    if act_dtype == "fp32" or weight_dtype == "fp32":
        return "fp32"
    if act_dtype in ("bf16", "fp16"):
        return act_dtype
    if act_dtype == "fp8" and weight_dtype in ("fp8", "int4", "nf4"):
        return "fp8"
    if act_dtype == "int8" and weight_dtype in ("int8", "int4"):
        return "int8"
    return "bf16" if act_dtype in ("fp8", "int8") else act_dtype
