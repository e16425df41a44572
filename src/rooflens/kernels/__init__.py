"""Triton kernels for the operators that dominate LLM inference, each with a torch reference.

One module per kernel; each holds the `@triton.jit` kernel(s), a launcher whose asserts state
the input contract, a plain-torch reference `<op>_ref` that runs on CPU, and `<op>_cost`
returning (FLOPs, minimum HBM bytes), FLOPs counted 2 per multiply-add. The modules in
`SHARED_MODULES` hold what several kernels share and are no kernel of their own.

Importing this package needs neither CUDA nor a GPU. To run the kernels on CPU, set
TRITON_INTERPRET=1 before importing it: Triton reads the variable when a kernel is decorated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from rooflens.kernels import (
    decode_attention,
    flash_attention,
    gemm,
    paged_decode_attention,
    rmsnorm,
    w4a16_gemm,
    w8a16_gemm,
)

# Helpers several kernels share: dtype tables and device limits (common), the split-KV combine
# and workspace that both decode launchers use (split_kv), the split-K skinny matmul behind the
# dense, W8A16 and W4A16 launchers (splitk).
SHARED_MODULES = ("common", "split_kv", "splitk")


class KernelEntry(NamedTuple):
    """A kernel's launcher, its torch reference (same arguments, minus `out`/workspace) and cost."""

    launcher: Callable
    ref: Callable
    cost: Callable


# Launchers are not re-exported, so `kernels.gemm` stays the module: import them from it.
KERNELS: dict[str, KernelEntry] = {
    "gemm": KernelEntry(gemm.gemm, gemm.gemm_ref, gemm.gemm_cost),
    "w8a16_gemm": KernelEntry(
        w8a16_gemm.w8a16_gemm, w8a16_gemm.w8a16_gemm_ref, w8a16_gemm.w8a16_gemm_cost
    ),
    "w4a16_gemm": KernelEntry(
        w4a16_gemm.w4a16_gemm, w4a16_gemm.w4a16_gemm_ref, w4a16_gemm.w4a16_gemm_cost
    ),
    "flash_attention": KernelEntry(
        flash_attention.flash_attention,
        flash_attention.flash_attention_ref,
        flash_attention.flash_attention_cost,
    ),
    "decode_attention": KernelEntry(
        decode_attention.decode_attention,
        decode_attention.decode_attention_ref,
        decode_attention.decode_attention_cost,
    ),
    "paged_decode_attention": KernelEntry(
        paged_decode_attention.paged_decode_attention,
        paged_decode_attention.paged_decode_attention_ref,
        paged_decode_attention.paged_decode_attention_cost,
    ),
    "rmsnorm": KernelEntry(rmsnorm.rmsnorm, rmsnorm.rmsnorm_ref, rmsnorm.rmsnorm_cost),
}

# The `op` of the `rooflens kernels predict` input rows (DESIGN.md, "Interfaces") that each
# kernel measures; None where the prediction CSV has no such op.
PREDICT_OP: dict[str, str | None] = {
    "gemm": "gemm",
    "w8a16_gemm": "gemm",
    "w4a16_gemm": "gemm",
    "flash_attention": "attention_prefill",
    "decode_attention": "attention_decode",
    "paged_decode_attention": "attention_decode",
    "rmsnorm": None,
}

__all__ = ["KERNELS", "PREDICT_OP", "KernelEntry"]
