"""Inputs and callables for one suite row: our Triton kernel (`triton`) or the torch baseline
(`torch`: cuBLAS matmul, `scaled_dot_product_attention`, `F.rms_norm`) on a device.

`make_calls` returns one zero-argument callable per input copy: the runner cycles through the
copies so that consecutive calls read different memory and L2 cannot serve them (input
rotation). Outputs are preallocated once, so a timed call allocates nothing.

Baselines: a weight-only quantized GEMM is compared with the 16-bit cuBLAS GEMM of the same
shape (what the quantization must beat); paged decode attention with SDPA over a dense cache;
decode over an fp8 cache (`kv_dtype` fp8) with SDPA over the 16-bit cache. A W8A8 FP8 GEMM row
(`dtype` fp8) is a baseline alone: `torch._scaled_mm` (cuBLASLt FP8, per-tensor scales, bf16
out), the production per-tensor FP8 GEMM; this project has no Triton FP8 kernel to set beside it
(BASELINE_ONLY).

`impl` "triton" runs the kernels' default variant, "triton_v1" the variant the 2026-11-24 H100
run measured (kernels/common.py VARIANTS), so one run can time both.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd
import torch
import torch.nn.functional as F

from rooflens.kernels.common import torch_dtype

Call = Callable[[], object]
IMPLS = ("triton", "triton_v1", "torch")
# Suite kernels with no Triton kernel of ours: only their torch baseline runs.
BASELINE_ONLY = frozenset({"fp8_gemm"})
FP8 = torch.float8_e4m3fn  # the E4M3 format of W8A8 weights and activations
PAGE = 16  # positions per KV page (vLLM's default block size)


def _int(row: pd.Series, name: str) -> int:
    return int(float(row[name]))


def _rand(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.randn(shape, dtype=dtype, device=device)


def element_dtype(name: str) -> torch.dtype:
    """The torch dtype of a row's `dtype`: a 16/32-bit float, or fp8 (E4M3)."""
    return FP8 if name == "fp8" else torch_dtype(name)


def input_bytes(row: pd.Series) -> float:
    """Bytes of one copy of a row's inputs (what rotation must multiply past the cache)."""
    op = row["op"]
    es = element_dtype(str(row["dtype"])).itemsize
    if op == "gemm":
        return float(_int(row, "m") * _int(row, "k") + _int(row, "n") * _int(row, "k")) * es
    if op == "norm":
        return 2.0 * _int(row, "rows") * _int(row, "hidden") * es
    B, H, Hk, D = (_int(row, c) for c in ("batch", "n_heads", "n_kv_heads", "head_dim"))
    if op == "attention_prefill":
        S = _int(row, "seq_len")
        return float(B * S * (H + 2 * Hk) * D) * es
    return float(B * (H + 2 * Hk * _int(row, "kv_len")) * D) * es


def _launcher(kernel: str, impl: str = "triton") -> Callable[..., object]:
    """Our Triton launcher by kernel name (imported only when a Triton run asks for it), bound
    to the variant `impl` names."""
    import functools
    import inspect

    from rooflens.kernels import KERNELS

    launcher = KERNELS[kernel].launcher
    if "variant" not in inspect.signature(launcher).parameters:  # one variant only (rmsnorm)
        return launcher
    return functools.partial(launcher, variant="v1" if impl == "triton_v1" else "v2")


def _gemm(row: pd.Series, impl: str, device: str, copies: int) -> list[Call]:
    m, n, k = _int(row, "m"), _int(row, "n"), _int(row, "k")
    if str(row["dtype"]) == "fp8":
        return _fp8_gemm(m, n, k, impl, device, copies)
    dtype = torch_dtype(str(row["dtype"]))
    out = torch.empty((m, n), dtype=dtype, device=device)
    kernel, group = row.get("kernel", "gemm"), int(float(row.get("group_size", 128) or 128))
    calls: list[Call] = []
    for _ in range(copies):
        x, w = _rand((m, k), dtype, device), _rand((n, k), dtype, device) / math.sqrt(k)
        if impl == "torch":
            calls.append(lambda x=x, w=w: torch.mm(x, w.t(), out=out))
        elif kernel == "w8a16_gemm":
            from rooflens.kernels.w8a16_gemm import quantize_w8

            q, s = quantize_w8(w, group)
            run = _launcher(kernel, impl)
            calls.append(lambda x=x, q=q, s=s, run=run: run(x, q, s, group, out=out))
        elif kernel == "w4a16_gemm":
            from rooflens.kernels.w4a16_gemm import quantize_w4

            p, s, z = quantize_w4(w, group)
            run = _launcher(kernel, impl)
            calls.append(lambda x=x, p=p, s=s, z=z, run=run: run(x, p, s, z, group, out=out))
        else:
            run = _launcher("gemm", impl)
            calls.append(lambda x=x, w=w, run=run: run(x, w, out=out))
    return calls


def _fp8_gemm(m: int, n: int, k: int, impl: str, device: str, copies: int) -> list[Call]:
    """Y[m, n] = X[m, k] · W[n, k]ᵀ in FP8 with per-tensor scales, bf16 out: cuBLASLt through
    `torch._scaled_mm` (W column-major, as it requires), the call vLLM's per-tensor W8A8 makes."""
    if impl != "torch":
        raise ValueError(f"no {impl} kernel for an FP8 GEMM: only its torch baseline runs")
    out = torch.empty((m, n), dtype=torch.bfloat16, device=device)
    scale = torch.ones((), dtype=torch.float32, device=device)
    calls: list[Call] = []
    for _ in range(copies):
        x = _rand((m, k), torch.bfloat16, device).to(FP8)
        w = (_rand((n, k), torch.bfloat16, device) / math.sqrt(k)).to(FP8)
        calls.append(lambda x=x, w=w: torch._scaled_mm(
            x, w.t(), scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16, out=out))  # fmt: skip
    return calls


def _prefill(row: pd.Series, impl: str, device: str, copies: int) -> list[Call]:
    B, H, Hk, D = (_int(row, c) for c in ("batch", "n_heads", "n_kv_heads", "head_dim"))
    S, dtype = _int(row, "seq_len"), torch_dtype(str(row["dtype"]))
    out = torch.empty((B, H, S, D), dtype=dtype, device=device)
    calls: list[Call] = []
    for _ in range(copies):
        q, k, v = (_rand((B, h, S, D), dtype, device) for h in (H, Hk, Hk))
        if impl == "torch":
            calls.append(lambda q=q, k=k, v=v: F.scaled_dot_product_attention(
                q, k, v, is_causal=True, enable_gqa=True))  # fmt: skip
        else:
            run = _launcher("flash_attention", impl)
            calls.append(lambda q=q, k=k, v=v, run=run: run(q, k, v, out=out))
    return calls


def _decode(row: pd.Series, impl: str, device: str, copies: int) -> list[Call]:
    B, H, Hk, D = (_int(row, c) for c in ("batch", "n_heads", "n_kv_heads", "head_dim"))
    L, dtype = _int(row, "kv_len"), torch_dtype(str(row["dtype"]))
    out = torch.empty((B, H, D), dtype=dtype, device=device)
    lens = torch.full((B,), L, dtype=torch.int32, device=device)
    paged = row.get("kernel") == "paged_decode_attention"
    kv_dtype = str(row.get("kv_dtype") or row["dtype"])
    fp8 = kv_dtype == "fp8" and impl != "torch"
    cache_dtype = FP8 if fp8 else dtype
    pages = math.ceil(L / PAGE)
    calls: list[Call] = []
    for _ in range(copies):
        q = _rand((B, H, D), dtype, device)
        if impl == "torch":
            k, v = (_rand((B, Hk, L, D), dtype, device) for _ in range(2))
            calls.append(lambda q=q, k=k, v=v: F.scaled_dot_product_attention(
                q.unsqueeze(2), k, v, enable_gqa=True))  # fmt: skip
        elif paged:
            k, v = (_rand((B * pages, PAGE, Hk, D), dtype, device).to(cache_dtype) for _ in "kv")
            table = torch.randperm(B * pages, device=device).to(torch.int32).view(B, pages)
            run = _launcher("paged_decode_attention", impl)
            calls.append(lambda q=q, k=k, v=v, t=table, run=run: run(q, k, v, t, lens, out=out))
        else:
            k, v = (_rand((B, Hk, L, D), dtype, device).to(cache_dtype) for _ in "kv")
            run = _launcher("decode_attention", impl)
            calls.append(lambda q=q, k=k, v=v, run=run: run(q, k, v, lens, out=out))
    return calls


def _norm(row: pd.Series, impl: str, device: str, copies: int) -> list[Call]:
    n, D, dtype = _int(row, "rows"), _int(row, "hidden"), torch_dtype(str(row["dtype"]))
    weight = _rand((D,), dtype, device)
    out, res_out = (torch.empty((n, D), dtype=dtype, device=device) for _ in range(2))
    calls: list[Call] = []
    for _ in range(copies):
        x, res = _rand((n, D), dtype, device), _rand((n, D), dtype, device)
        if impl == "torch":
            calls.append(lambda x=x, r=res: F.rms_norm(x + r, (D,), weight, 1e-6))
        else:
            run = _launcher("rmsnorm")
            calls.append(
                lambda x=x, r=res, run=run: run(x, weight, r, out=out, residual_out=res_out)
            )
    return calls


BUILDERS = {"gemm": _gemm, "attention_prefill": _prefill, "attention_decode": _decode,
            "norm": _norm}  # fmt: skip


def make_calls(row: pd.Series, impl: str, device: str, copies: int = 1) -> list[Call]:
    """`copies` callables running the row's kernel (`impl` 'triton' or 'triton_v1') or baseline
    ('torch')."""
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
    if row["op"] not in BUILDERS:
        raise ValueError(f"no runner for op {row['op']!r}")
    return BUILDERS[row["op"]](row, impl, device, max(1, copies))


def baseline_name(row: pd.Series) -> str:
    """torch.mm (cuBLAS on a GPU; _scaled_mm for FP8), scaled_dot_product_attention,
    F.rms_norm."""
    if row["op"] == "gemm" and str(row.get("dtype")) == "fp8":
        return "scaled_mm"
    return {"gemm": "mm", "attention_prefill": "sdpa", "attention_decode": "sdpa",
            "norm": "rms_norm"}[row["op"]]  # fmt: skip
