"""Every kernel against its torch reference at production shapes (GPU only; issue 13).

Shapes are Llama-3-8B at TP 1 and Llama-3-70B at TP 8 (per-GPU widths: d_model 4096 / 8192,
32 / 8 query heads over 8 / 1 KV heads, head_dim 128, FFN 14336 / 28672): decode GEMMs at
M = 1…16 and past the quantized kernels' crossover (M ≥ 64), prefill GEMMs at M = 2048, causal
prefill attention up to 4k tokens, decode attention from batch 1 at 128k positions (where a
split-KV grid is needed) to batch 64, and RMSNorm over decode and prefill rows. The tolerance
rule is kernel_tolerances.py's (twice torch's own same-dtype error against an fp64 truth).
On a CPU these skip visibly; the interpreter tests in the per-kernel files cover awkward shapes.
"""

from __future__ import annotations

import pytest
import torch
from kernel_tolerances import assert_matches_reference, poisoned

from rooflens.kernels.decode_attention import decode_attention, decode_attention_ref
from rooflens.kernels.flash_attention import flash_attention, flash_attention_ref
from rooflens.kernels.gemm import gemm, gemm_ref
from rooflens.kernels.paged_decode_attention import (
    paged_decode_attention,
    paged_decode_attention_ref,
)
from rooflens.kernels.rmsnorm import rmsnorm, rmsnorm_ref
from rooflens.kernels.w4a16_gemm import quantize_w4, w4a16_gemm, w4a16_gemm_ref
from rooflens.kernels.w8a16_gemm import quantize_w8, w8a16_gemm, w8a16_gemm_ref

pytestmark = pytest.mark.gpu

DTYPES = [pytest.param(torch.bfloat16, id="bf16"), pytest.param(torch.float16, id="fp16")]
# (n, k) of the linear layers: Llama-3-8B TP1 qkv, o, up+gate, down; Llama-3-70B TP8 qkv, down.
LINEARS = {
    "8b-qkv": (6144, 4096),
    "8b-o": (4096, 4096),
    "8b-up_gate": (28672, 4096),
    "8b-down": (4096, 14336),
    "70b-tp8-qkv": (1280, 8192),
    "70b-tp8-down": (8192, 3584),
}
DECODE_M = [1, 3, 8, 16]
QUANT_M = [*DECODE_M, 64, 256]  # past the dequantise-and-dot crossover too
GROUP = 128


def _weights(n: int, k: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(n, k, dtype=dtype, device="cuda") / k**0.5


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m", [*DECODE_M, 2048])
@pytest.mark.parametrize("layer", list(LINEARS))
def test_gemm_production(layer: str, m: int, dtype: torch.dtype) -> None:
    n, k = LINEARS[layer]
    x, w = torch.randn(m, k, dtype=dtype, device="cuda"), _weights(n, k, dtype)
    out = poisoned((m, n), dtype, "cuda")
    gemm(x, w, out=out)
    assert_matches_reference(out, gemm_ref, x, w)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m", QUANT_M)
@pytest.mark.parametrize("layer", ["8b-up_gate", "8b-down", "70b-tp8-qkv"])
def test_w4a16_gemm_production(layer: str, m: int, dtype: torch.dtype) -> None:
    n, k = LINEARS[layer]
    x = torch.randn(m, k, dtype=dtype, device="cuda")
    packed, scales, zeros = quantize_w4(_weights(n, k, dtype), GROUP)
    out = poisoned((m, n), dtype, "cuda")
    w4a16_gemm(x, packed, scales, zeros, GROUP, out=out)
    assert_matches_reference(out, w4a16_gemm_ref, x, packed, scales, zeros, GROUP)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m", QUANT_M)
@pytest.mark.parametrize("layer", ["8b-up_gate", "8b-down", "70b-tp8-qkv"])
def test_w8a16_gemm_production(layer: str, m: int, dtype: torch.dtype) -> None:
    n, k = LINEARS[layer]
    x = torch.randn(m, k, dtype=dtype, device="cuda")
    qweight, scales = quantize_w8(_weights(n, k, dtype), GROUP)
    out = poisoned((m, n), dtype, "cuda")
    w8a16_gemm(x, qweight, scales, GROUP, out=out)
    assert_matches_reference(out, w8a16_gemm_ref, x, qweight, scales, GROUP)


# (batch, seq_len, n_heads, n_kv_heads): 8B TP1 at 2k, 70B TP8 at 4k, a ragged 1000-token tile.
PREFILL = [(1, 2048, 32, 8), (1, 4096, 8, 1), (2, 1000, 32, 8)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", PREFILL, ids=lambda s: "x".join(map(str, s)))
def test_flash_attention_production(shape: tuple[int, int, int, int], dtype: torch.dtype) -> None:
    batch, seq, heads, kv_heads = shape
    q, k, v = (torch.randn(batch, h, seq, 128, dtype=dtype, device="cuda")
               for h in (heads, kv_heads, kv_heads))  # fmt: skip
    out = poisoned(q.shape, dtype, "cuda")
    flash_attention(q, k, v, out=out)
    assert_matches_reference(out, flash_attention_ref, q, k, v)


# (batch, kv_len, n_heads, n_kv_heads): one 128k sequence (split-KV), 8B at batch 8, 70B TP8
# at batch 64; lengths drawn ragged in [kv_len / 2, kv_len].
DECODE = [(1, 131072, 8, 1), (8, 8192, 32, 8), (64, 4096, 8, 1)]


def _lengths(batch: int, kv_len: int) -> torch.Tensor:
    lens = torch.randint(kv_len // 2, kv_len + 1, (batch,), dtype=torch.int32, device="cuda")
    lens[0] = kv_len
    return lens


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", DECODE, ids=lambda s: "x".join(map(str, s)))
def test_decode_attention_production(shape: tuple[int, int, int, int], dtype: torch.dtype) -> None:
    batch, kv_len, heads, kv_heads = shape
    q = torch.randn(batch, heads, 128, dtype=dtype, device="cuda")
    k, v = (torch.randn(batch, kv_heads, kv_len, 128, dtype=dtype, device="cuda")
            for _ in range(2))  # fmt: skip
    lens = _lengths(batch, kv_len)
    out = poisoned(q.shape, dtype, "cuda")
    decode_attention(q, k, v, lens, out=out)
    assert_matches_reference(out, decode_attention_ref, q, k, v, lens)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", DECODE, ids=lambda s: "x".join(map(str, s)))
def test_paged_decode_attention_production(
    shape: tuple[int, int, int, int], dtype: torch.dtype
) -> None:
    batch, kv_len, heads, kv_heads = shape
    block = 16  # vLLM's default page
    pages = kv_len // block
    pool = batch * pages
    q = torch.randn(batch, heads, 128, dtype=dtype, device="cuda")
    k, v = (torch.randn(pool, block, kv_heads, 128, dtype=dtype, device="cuda")
            for _ in range(2))  # fmt: skip
    table = torch.randperm(pool, device="cuda").to(torch.int32).view(batch, pages)
    lens = _lengths(batch, kv_len)
    out = poisoned(q.shape, dtype, "cuda")
    paged_decode_attention(q, k, v, table, lens, out=out)
    assert_matches_reference(out, paged_decode_attention_ref, q, k, v, table, lens)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows", [1, 16, 4096])
@pytest.mark.parametrize("hidden", [4096, 8192])
def test_rmsnorm_production(rows: int, hidden: int, dtype: torch.dtype) -> None:
    x, residual = (torch.randn(rows, hidden, dtype=dtype, device="cuda") for _ in range(2))
    weight = torch.randn(hidden, dtype=dtype, device="cuda")
    out, res_out = (poisoned((rows, hidden), dtype, "cuda") for _ in range(2))
    rmsnorm(x, weight, residual, out=out, residual_out=res_out)
    assert_matches_reference(out, lambda *a: rmsnorm_ref(*a)[0], x, weight, residual)
    torch.testing.assert_close(res_out, x + residual, rtol=0, atol=0)  # the rounded sum
