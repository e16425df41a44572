"""Helpers shared by every kernel module: dtype byte sizes, the interpreter switch, and the
online-softmax fold both attention kernels run per KV block (flash_attention, split_kv).

Nothing here touches CUDA, so importing `kernels` is safe on a machine without a GPU.
"""

from __future__ import annotations

import functools
import os

import torch
import triton
import triton.language as tl

# Bytes per element, keyed by the names the validator's CSV files use and by torch dtypes.
# int4 is half a byte: two values share one byte (see kernels/w4a16_gemm.py for the packing).
_BYTES_BY_NAME: dict[str, float] = {
    "fp32": 4,
    "float32": 4,
    "fp16": 2,
    "float16": 2,
    "half": 2,
    "bf16": 2,
    "bfloat16": 2,
    "fp8": 1,
    "int8": 1,
    "uint8": 1,
    "int4": 0.5,
    "int32": 4,
}

_TORCH_DTYPE_BY_NAME: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "float32": torch.float32,
    "fp16": torch.float16,
    "float16": torch.float16,
    "half": torch.float16,
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
}

# Kernel variants a launcher can run (issue 25): "v2" the rewrite (split-K skinny GEMMs, Hopper
# tile spaces, SM-derived decode splits), "v1" the kernels the 2026-11-24 H100 run measured,
# kept so that one GPU run times both (benchmarks/kernels.py).
VARIANTS = ("v2", "v1")


def check_variant(variant: str) -> None:
    assert variant in VARIANTS, f"variant must be one of {VARIANTS}, got {variant!r}"


# Floating dtypes the matmul and attention kernels accept as activations.
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
HALF_DTYPES = (torch.float16, torch.bfloat16)


def dtype_bytes(dtype: str | torch.dtype) -> float:
    """Bytes per element of `dtype`, given as a torch dtype or a name such as "fp16" or "int4"."""
    if isinstance(dtype, torch.dtype):
        return dtype.itemsize
    try:
        return _BYTES_BY_NAME[dtype.lower()]
    except KeyError:
        known = ", ".join(sorted(_BYTES_BY_NAME))
        raise ValueError(f"unknown dtype {dtype!r}; expected one of: {known}") from None


def torch_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """The torch floating dtype named by `dtype` ("fp16", "bf16", "fp32" or a torch dtype)."""
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        return _TORCH_DTYPE_BY_NAME[dtype.lower()]
    except KeyError:
        known = ", ".join(sorted(_TORCH_DTYPE_BY_NAME))
        raise ValueError(f"unknown float dtype {dtype!r}; expected one of: {known}") from None


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1).

    Triton reads the variable when a kernel is decorated, i.e. when its module is imported, so
    this answer is only meaningful if the variable was set before `kernels` was imported.
    """
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


@functools.cache
def _device_limits(index: int) -> tuple[int, int]:
    props = torch.cuda.get_device_properties(index)
    smem = getattr(props, "shared_memory_per_multiprocessor", 0) or 228 * 1024
    return props.multi_processor_count, int(smem)


def device_limits(device: torch.device) -> tuple[int, int]:
    """(SMs, shared-memory bytes per SM) of `device`, read at launch (never at import). In the
    interpreter (4 SMs of 100 KB) small tests already plan several programs per head."""
    if interpreting() or device.type != "cuda":
        return 4, 100 * 1024
    return _device_limits(device.index if device.index is not None else torch.cuda.current_device())


@triton.jit
def softmax_fold(acc, m_i, l_i, s, v, INPUT_PRECISION: tl.constexpr):
    """Fold one block of scores s [R, N] (log2 domain, masked keys at -inf) and values v [N, D]
    into the running (acc [R, D], max m_i [R], sum l_i [R]); every row needs one finite score
    by now (Milakov & Gimelshein 2018, online softmax; FlashAttention's rescaling)."""
    m_new = tl.maximum(m_i, tl.max(s, axis=1))
    p = tl.math.exp2(s - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, axis=1)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=INPUT_PRECISION)
    return acc, m_new, l_i
