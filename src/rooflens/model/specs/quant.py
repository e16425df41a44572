"""Kernel families of quantized matmuls: the precision labels production engines' kernels are
measured and dispatched under (aiconfigurator's `gemm_dtype` / `moe_dtype`), what each computes
on, and which family a (weight, activation) pair runs as.

A family is one kind of kernel with its own efficiency: per-tensor FP8 (CUTLASS scaled-mm) and
128-block FP8 (DeepSeek-style, DeepGEMM / block-scaled CUTLASS) have the same operand types but
different kernels; weight-only int4 (Marlin, TensorRT-LLM's WeightOnlyQuantMatmul) streams
packed weights and dequantizes in registers before a 16-bit MMA.
"""

from __future__ import annotations

# family label -> (dtype of the activations / MMA operands, weight storage dtype or None when
# the weights are stored at that dtype).
FAMILIES: dict[str, tuple[str, str | None]] = {
    "bfloat16": ("bf16", None),
    "float16": ("fp16", None),
    "fp8": ("fp8", None),  # W8A8, per-tensor scales
    "fp8_block": ("fp8", None),  # W8A8, 128-wide block scales (DeepSeek style)
    "int8_wo": ("bf16", "int8"),  # weight-only, bf16 activations
    "int4_wo": ("bf16", "int4"),  # weight-only (Marlin / TensorRT-LLM WeightOnlyQuantMatmul)
    "sq": ("int8", None),  # SmoothQuant W8A8 int8
    "nvfp4": ("nvfp4", None),  # W4A4, 16-element blocks with fp8 scales
    "w4a16_mxfp4": ("bf16", "mxfp4"),  # gpt-oss experts, bf16 activations
    "w4a8_mxfp4_mxfp8": ("fp8", "mxfp4"),  # MXFP4 experts, MXFP8 activations
}


PLAIN_FAMILIES = ("bfloat16", "float16")  # 16-bit matmuls: no family terms of their own


def family_of(weight_dtype: str, act_dtype: str, block_scaled: bool = False) -> str | None:
    """The kernel family a matmul of these operands runs as, or None when no engine ships one
    (the pricing then uses its generic terms). `block_scaled` picks 128-block FP8 over
    per-tensor FP8."""
    if weight_dtype == act_dtype or (
        weight_dtype in ("bf16", "fp16") and act_dtype == weight_dtype
    ):
        if act_dtype == "fp8":
            return "fp8_block" if block_scaled else "fp8"
        if act_dtype == "int8":
            return "sq"
    for label, (act, weight) in FAMILIES.items():
        if act == act_dtype and (weight or act) == weight_dtype and label != "fp8_block":
            return label
    return None
