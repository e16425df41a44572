"""Edge shapes the per-kernel tests do not reach, on the CPU interpreter (and the GPU if any):
decode-sized M = 1…16 with widths off the tile grid and several quantization groups, GEMMs one
past a tile, GQA groups of three, prefill one token past a tile, decode over a single cached
position and over fewer positions than splits. Second route for the quantized GEMMs: the dense
`gemm` kernel on the dequantised weights."""

from __future__ import annotations

import pytest
import torch
from kernel_tolerances import TOLERANCE, assert_matches_reference, poisoned

from rooflens.kernels.decode_attention import decode_attention, decode_attention_ref
from rooflens.kernels.flash_attention import flash_attention, flash_attention_ref
from rooflens.kernels.gemm import gemm, gemm_ref
from rooflens.kernels.paged_decode_attention import (
    paged_decode_attention,
    paged_decode_attention_ref,
)
from rooflens.kernels.w4a16_gemm import dequantize_w4, quantize_w4, w4a16_gemm, w4a16_gemm_ref
from rooflens.kernels.w8a16_gemm import dequantize_w8, quantize_w8, w8a16_gemm, w8a16_gemm_ref

# (m, n, k, group): M over the decode range, N one past / short of a 32-wide tile, 3 groups.
QUANT_SHAPES = [(16, 33, 384, 128), (2, 97, 96, 32), (11, 31, 192, 64)]


@pytest.mark.parametrize(("m", "n", "k", "group"), QUANT_SHAPES)
def test_w4a16_decode_shapes(m: int, n: int, k: int, group: int, device: str) -> None:
    x = torch.randn(m, k, dtype=torch.float16, device=device)
    packed, scales, zeros = quantize_w4(
        torch.randn(n, k, dtype=torch.float16, device=device), group
    )
    out = poisoned((m, n), torch.float16, device)
    w4a16_gemm(x, packed, scales, zeros, group, out=out)
    assert_matches_reference(out, w4a16_gemm_ref, x, packed, scales, zeros, group)
    # second route: the dense kernel over the dequantised weights, same rounding of W
    dense = gemm(x, dequantize_w4(packed, scales, zeros, group, x.dtype))
    tol = TOLERANCE[torch.float16]
    torch.testing.assert_close(out, dense, rtol=tol, atol=tol * dense.abs().max().item())


@pytest.mark.parametrize(("m", "n", "k", "group"), QUANT_SHAPES)
def test_w8a16_decode_shapes(m: int, n: int, k: int, group: int, device: str) -> None:
    x = torch.randn(m, k, dtype=torch.float16, device=device)
    qweight, scales = quantize_w8(torch.randn(n, k, dtype=torch.float16, device=device), group)
    out = poisoned((m, n), torch.float16, device)
    w8a16_gemm(x, qweight, scales, group, out=out)
    assert_matches_reference(out, w8a16_gemm_ref, x, qweight, scales, group)
    dense = gemm(x, dequantize_w8(qweight, scales, group, x.dtype))
    tol = TOLERANCE[torch.float16]
    torch.testing.assert_close(out, dense, rtol=tol, atol=tol * dense.abs().max().item())


@pytest.mark.parametrize(("m", "n", "k"), [(33, 1, 65), (1, 33, 1), (65, 17, 33)])
def test_gemm_one_past_a_tile(m: int, n: int, k: int, device: str) -> None:
    x, w = (torch.randn(s, k, device=device) for s in (m, n))
    out = poisoned((m, n), torch.float32, device)
    gemm(x, w, out=out)
    assert_matches_reference(out, gemm_ref, x, w)


@pytest.mark.parametrize(("seq", "heads", "kv_heads"), [(65, 6, 2), (2, 3, 1)])
def test_flash_attention_gqa3_and_ragged_tiles(seq: int, heads: int, kv_heads: int,
                                               device: str) -> None:  # fmt: skip
    q, k, v = (torch.randn(1, h, seq, 64, dtype=torch.float16, device=device)
               for h in (heads, kv_heads, kv_heads))  # fmt: skip
    out = poisoned(q.shape, torch.float16, device)
    flash_attention(q, k, v, out=out)
    assert_matches_reference(out, flash_attention_ref, q, k, v)


@pytest.mark.parametrize("num_splits", [1, 8])
def test_decode_over_one_position_and_fewer_positions_than_splits(
    num_splits: int, device: str
) -> None:
    q = torch.randn(3, 6, 64, device=device)
    k, v = (torch.randn(3, 2, 9, 64, device=device) for _ in range(2))
    lens = torch.tensor([1, 5, 9], dtype=torch.int32, device=device)
    out = poisoned(q.shape, torch.float32, device)
    decode_attention(q, k, v, lens, num_splits=num_splits, out=out)
    assert_matches_reference(out, decode_attention_ref, q, k, v, lens)


def test_paged_decode_over_one_position(device: str) -> None:
    q = torch.randn(2, 6, 64, device=device)
    k, v = (torch.randn(5, 16, 2, 64, device=device) for _ in range(2))
    table = torch.tensor([[3, 0], [1, 4]], dtype=torch.int32, device=device)
    lens = torch.tensor([1, 17], dtype=torch.int32, device=device)
    out = poisoned(q.shape, torch.float32, device)
    paged_decode_attention(q, k, v, table, lens, num_splits=4, out=out)
    assert_matches_reference(out, paged_decode_attention_ref, q, k, v, table, lens)
