"""Kernel families of quantized matmuls: the precision labels production engines' kernels are
measured and dispatched under (aiconfigurator's `gemm_dtype` / `moe_dtype`), what each computes
on, and which family a (weight, activation) pair runs as.

A family is one kind of kernel with its own efficiency: per-tensor FP8 (CUTLASS scaled-mm) and
128-block FP8 (DeepSeek-style, DeepGEMM / block-scaled CUTLASS) have the same operand types but
different kernels; weight-only int4 (Marlin, TensorRT-LLM's WeightOnlyQuantMatmul) streams
packed weights and dequantizes in registers before a 16-bit MMA.

Above the families, the precision schemes users pick (`--quant`): the names engines give them
(W8A8-FP8, FP8-block, W8A16, W4A16, SmoothQuant, NVFP4, MXFP4, bf16), each a (weight, activation)
pair and its family, and `native`, the checkpoint's own format.

Fused attention has families too (`attention_family`): FP8 attention (FA3's and TensorRT-LLM's
FP8 FMHA: QKᵀ and PV on the fp8 unit) and 16-bit attention over a narrower KV cache
(dequantized as it loads) each run their own kernels, measured apart from bf16.
"""

from __future__ import annotations

from dataclasses import dataclass

from rooflens.model.specs.dtypes import compute_dtype, dtype_bytes

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


def attention_family(act_dtype: str, kv_dtype: str, decode: bool = False) -> str | None:
    """The kernel family of a fused attention call: `fp8` where its MMAs run on the fp8 unit
    (FP8 queries over an FP8 cache), `kv_<dtype>` where 16-bit MMAs read a narrower KV cache,
    None for attention at the activations' width (the bare kinds' terms). A decode call (one
    new token per sequence) streams its cache and barely computes: its family is the cache's
    (`kv_fp8`), whatever the queries' dtype."""
    if compute_dtype(kv_dtype, act_dtype) == "fp8" and not decode:
        return "fp8"
    if dtype_bytes(kv_dtype) < (2.0 if decode else dtype_bytes(act_dtype)):
        return f"kv_{kv_dtype}"
    return None


# Precision schemes as engines name them (vLLM `--quantization`, TensorRT-LLM ModelOpt, SGLang):
# each sets the weights' and activations' dtypes and the kernel family that runs its matmuls.
# `--quant` (model/predict/request.py) picks one; `native` keeps the checkpoint's own format.
@dataclass(frozen=True)
class Scheme:
    label: str  # the engine's name, as every face prints it
    weight_dtype: str
    act_dtype: str
    family: str  # a FAMILIES label
    means: str  # what engines call it and run


NATIVE = "native"
SCHEMES: dict[str, Scheme] = {
    "bf16": Scheme("bf16", "bf16", "bf16", "bfloat16", "16-bit weights and activations"),
    "w8a8-fp8": Scheme("W8A8-FP8", "fp8", "fp8", "fp8", "FP8 weights and activations, "
                       "per-tensor scales (vLLM/SGLang fp8, TensorRT-LLM FP8)"),
    "fp8-block": Scheme("FP8-block", "fp8", "fp8", "fp8_block", "FP8 weights and activations, "
                        "128-block scales (DeepSeek-V3's checkpoint, DeepGEMM)"),
    "w8a16": Scheme("W8A16", "int8", "bf16", "int8_wo", "int8 weight-only, bf16 activations "
                    "(TensorRT-LLM int8_wo, GPTQ 8-bit)"),
    "w4a16": Scheme("W4A16", "int4", "bf16", "int4_wo", "int4 weight-only, bf16 activations "
                    "(AWQ, GPTQ; Marlin kernels)"),
    "smoothquant": Scheme("SmoothQuant", "int8", "int8", "sq", "W8A8 int8 (SmoothQuant, "
                          "TensorRT-LLM sq)"),
    "nvfp4": Scheme("NVFP4", "nvfp4", "nvfp4", "nvfp4", "W4A4 NVFP4, 16-element fp8 block scales "
                    "(Blackwell; ModelOpt)"),
    "mxfp4": Scheme("MXFP4", "mxfp4", "bf16", "w4a16_mxfp4", "MXFP4 weights, bf16 activations "
                    "(gpt-oss's kernels off Blackwell)"),
}  # fmt: skip
QUANT_CHOICES = (NATIVE, *SCHEMES)
# The same schemes under the names the engines' own options give them, so `--quant` takes what a
# user passes to the engine: vLLM's and SGLang's `--quantization` (fp8, awq, gptq, awq_marlin,
# gptq_marlin, modelopt, modelopt_fp4, w8a8_int8, w8a8_fp8) and TensorRT-LLM's QuantAlgo
# (FP8, FP8_BLOCK_SCALES, W4A16_AWQ, W4A16_GPTQ, W8A16_GPTQ, W8A8_SQ_PER_CHANNEL, W4A16_MXFP4,
# NVFP4). Read case-blind with '_' as '-' (`quant_id`); gptq and awq are their 4-bit default.
ENGINE_QUANT_NAMES: dict[str, str] = {
    "fp8": "w8a8-fp8",
    "modelopt": "w8a8-fp8",  # vLLM: a ModelOpt FP8 checkpoint
    "fp8-block-scales": "fp8-block",
    "awq": "w4a16",
    "awq-marlin": "w4a16",
    "gptq": "w4a16",
    "gptq-marlin": "w4a16",
    "w4a16-awq": "w4a16",
    "w4a16-gptq": "w4a16",
    "w8a16-gptq": "w8a16",
    "w8a8-int8": "smoothquant",
    "w8a8-sq-per-channel": "smoothquant",
    "modelopt-fp4": "nvfp4",
    "w4a16-mxfp4": "mxfp4",
}


def quant_id(name: str) -> str:
    """The `--quant` choice a scheme name means: an id of QUANT_CHOICES as it is, or an engine's
    name for it (ENGINE_QUANT_NAMES: 'FP8' and 'fp8' are 'w8a8-fp8', 'awq_marlin' is 'w4a16');
    any other name comes back as written, for the choice check to refuse in one line."""
    key = name.strip().lower().replace("_", "-")
    key = ENGINE_QUANT_NAMES.get(key, key)
    return key if key in QUANT_CHOICES else name


# Native 8-bit float checkpoints among the presets carry 128-block scales (DeepSeek-V3's
# config.json: weight_block_size [128, 128]), so their W8A8 runs the block-FP8 family.
NATIVE_FP8_SCHEME = "fp8-block"


def keeps_block_scales(native_weight_dtype: str, weight_dtype: str, act_dtype: str) -> bool:
    """W8A8 FP8 of a checkpoint stored in FP8 runs as that checkpoint: 128-block scales, the
    block-FP8 kernels (engines load DeepSeek-V3's scales as they are; per-tensor FP8 would mean
    re-quantizing it, which `--quant w8a8-fp8` still asks for by name)."""
    return native_weight_dtype == weight_dtype == act_dtype == "fp8"


def scheme_of(weight_dtype: str, act_dtype: str, expert_dtype: str = "",
              block_scaled: bool = False) -> str:  # fmt: skip
    """The scheme id these dtypes make ('' when none does: fp8 weight-only, mixed experts);
    `block_scaled` picks FP8-block over per-tensor W8A8-FP8."""
    if expert_dtype and expert_dtype != weight_dtype:
        return ""
    if (weight_dtype, act_dtype) == ("fp8", "fp8"):
        return "fp8-block" if block_scaled else "w8a8-fp8"
    pairs = {(s.weight_dtype, s.act_dtype): key for key, s in SCHEMES.items()}
    return pairs.get((weight_dtype, act_dtype), "")


def scheme_text(weight_dtype: str, act_dtype: str, expert_dtype: str = "",
                block_scaled: bool = False) -> str:  # fmt: skip
    """What a precision is in engine words: 'W4A16', 'MXFP4 experts, bf16 attention',
    'fp8 weights, bf16 activations' (a pair no scheme names)."""
    if expert_dtype and expert_dtype != weight_dtype:
        experts = SCHEMES[expert_dtype].label if expert_dtype in SCHEMES else expert_dtype
        rest = scheme_text(weight_dtype, act_dtype)
        return f"{experts} experts, {rest} attention"
    key = scheme_of(weight_dtype, act_dtype, block_scaled=block_scaled)
    if key:
        return SCHEMES[key].label
    return f"{weight_dtype} weights, {act_dtype} activations"


def precision_label(weight_dtype: str, act_dtype: str, kv_dtype: str, scheme: str = "") -> str:
    """A configuration's precision as the planner's tables print it: 'W8A8-FP8, fp8 KV';
    `scheme` (a planner row's, where it has one) names FP8-block over W8A8-FP8."""
    text = scheme_text(weight_dtype, act_dtype, block_scaled=scheme == NATIVE_FP8_SCHEME)
    return f"{text}, {kv_dtype} KV"
