"""Tests for issue 25's kernel variants: kernels/splitk.py (the split-K skinny matmul behind
gemm, w8a16_gemm and w4a16_gemm), the SM-derived decode split count and chunked combine of
kernels/split_kv.py, fp8 KV caches, and every v2 launcher beside its v1 on the same inputs.

Interpreter shapes are small and awkward (M over 1…17, N off the tile grid, K with a tail, split
counts that leave the last slice short); the GPU tests run production shapes."""

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
from rooflens.kernels.split_kv import default_num_splits, planned_num_splits
from rooflens.kernels.splitk import PROGRAMS_PER_SM, plan_splits, splitk_matmul, tiles
from rooflens.kernels.w4a16_gemm import quantize_w4, w4a16_gemm, w4a16_gemm_ref
from rooflens.kernels.w8a16_gemm import quantize_w8, w8a16_gemm, w8a16_gemm_ref

FP16 = torch.float16


@pytest.mark.parametrize("splits", [1, 2, 3])
@pytest.mark.parametrize(("m", "n", "k", "group"), [(1, 45, 192, 32), (17, 33, 128, 64)])
def test_int4_split_k_matches_reference(m, n, k, group, splits, device: str) -> None:
    x = torch.randn(m, k, dtype=FP16, device=device)
    packed, scales, zeros = quantize_w4(torch.randn(n, k, dtype=FP16, device=device), group)
    out = poisoned((m, n), FP16, device)
    splitk_matmul(x, packed, out, 4, group, scales, zeros, splits=splits)
    assert_matches_reference(out, w4a16_gemm_ref, x, packed, scales, zeros, group)


@pytest.mark.parametrize("splits", [1, 4])
def test_int8_split_k_matches_reference(splits: int, device: str) -> None:
    m, n, k, group = 3, 70, 256, 64
    x = torch.randn(m, k, dtype=FP16, device=device)
    q, s = quantize_w8(torch.randn(n, k, dtype=FP16, device=device), group)
    out = poisoned((m, n), FP16, device)
    splitk_matmul(x, q, out, 8, group, s, splits=splits)
    assert_matches_reference(out, w8a16_gemm_ref, x, q, s, group)


@pytest.mark.parametrize(("k", "splits"), [(100, 2), (161, 3), (32, 1)])
def test_dense_split_k_with_a_k_tail(k: int, splits: int, device: str) -> None:
    # K off the 32-wide tile: the last slice is short and masked.
    x = torch.randn(5, k, device=device)
    w = torch.randn(37, k, device=device)
    out = poisoned((5, 37), torch.float32, device)
    splitk_matmul(x, w, out, 16, splits=splits)
    assert_matches_reference(out, gemm_ref, x, w)


def test_split_plan_fills_the_sms_and_leaves_no_split_empty() -> None:
    block = (16, 64, 128)
    # Llama-3-8B o_proj at batch 1 on 132 SMs: 64 column tiles, 32 K tiles.
    splits = plan_splits(1, 4096, 4096, block, 132)
    k_tiles = 4096 // 128
    per_split = -(-k_tiles // splits)
    assert (splits - 1) * per_split < k_tiles  # the last split holds at least one tile
    assert per_split >= 2  # something to pipeline
    assert 64 * splits >= PROGRAMS_PER_SM * 132 / 2  # near the grid target
    # A wide layer (Llama-3-70B up_gate, 896 column tiles) fills the GPU alone: no split.
    assert plan_splits(1, 2 * 28672, 8192, block, 132) == 1
    # More SMs never mean fewer splits.
    assert plan_splits(1, 4096, 4096, block, 264) >= splits


def test_tiles_stay_inside_one_quantisation_group() -> None:
    for bits in (8, 4):
        for group in (32, 64, 128, 256):
            for m in (1, 16, 64, 300):
                assert group % tiles(m, bits, group)[2] == 0


def test_decode_splits_have_no_64_cap_and_fill_the_sms(monkeypatch) -> None:
    import rooflens.kernels.split_kv as split_kv

    # Batch 1, one KV head (70B at TP 8), 128k positions, 132 SMs of 228 KB, 96 KB of stages.
    assert default_num_splits(1, 1, 131072, 64) == 64  # v1: capped
    monkeypatch.setattr(split_kv, "device_limits", lambda device: (132, 228 * 1024))
    cpu = torch.device("cpu")
    assert planned_num_splits(1, 1, 131072, 64, 96 * 1024, cpu) == 132 * 2  # one full wave
    assert planned_num_splits(1, 1, 100, 64, 96 * 1024, cpu) == 2  # never past the KV blocks
    assert planned_num_splits(64, 8, 131072, 64, 96 * 1024, cpu) == 1  # the batch fills it


def test_decode_with_many_splits_merges_in_chunks(device: str) -> None:
    # 40 splits: more than one 32-split chunk of the combine kernel.
    q = torch.randn(2, 4, 16, dtype=torch.float32, device=device)
    k = torch.randn(2, 2, 1300, 16, dtype=torch.float32, device=device)
    v = torch.randn_like(k)
    lens = torch.tensor([1300, 5], dtype=torch.int32, device=device)
    out = poisoned(q.shape, q.dtype, device)
    decode_attention(q, k, v, lens, num_splits=40, out=out)
    assert_matches_reference(out, decode_attention_ref, q, k, v, lens)


def _fp8_cache(shape, device):
    full = torch.randn(shape, dtype=FP16, device=device)
    scale = 0.5
    return (full / scale).to(torch.float8_e4m3fn), scale


def test_decode_over_an_fp8_cache(device: str) -> None:
    if device == "cuda" and torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("fp8 conversion needs compute capability 8.9")
    q = torch.randn(2, 6, 64, dtype=FP16, device=device)
    (k8, ks), (v8, vs) = (_fp8_cache((2, 3, 90, 64), device) for _ in "kv")
    lens = torch.tensor([90, 31], dtype=torch.int32, device=device)
    out = poisoned(q.shape, FP16, device)
    decode_attention(q, k8, v8, lens, out=out, k_scale=ks, v_scale=vs)
    k, v = k8.to(FP16) * ks, v8.to(FP16) * vs  # exact: the scale is a power of two
    assert_matches_reference(out, decode_attention_ref, q, k, v, lens)


def test_paged_decode_over_an_fp8_cache(device: str) -> None:
    if device == "cuda" and torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("fp8 conversion needs compute capability 8.9")
    q = torch.randn(2, 4, 64, dtype=FP16, device=device)
    (k8, ks), (v8, vs) = (_fp8_cache((9, 16, 2, 64), device) for _ in "kv")
    table = torch.tensor([[3, 0, 7, 1], [5, 2, 8, 4]], dtype=torch.int32, device=device)
    lens = torch.tensor([50, 17], dtype=torch.int32, device=device)
    out = poisoned(q.shape, FP16, device)
    paged_decode_attention(q, k8, v8, table, lens, out=out, k_scale=ks, v_scale=vs)
    k, v = k8.to(FP16) * ks, v8.to(FP16) * vs
    assert_matches_reference(out, paged_decode_attention_ref, q, k, v, table, lens)


@pytest.mark.parametrize("variant", ["v1", "v2"])
def test_both_variants_of_every_launcher_compute_the_same_function(variant, device) -> None:
    x = torch.randn(7, 192, dtype=FP16, device=device)
    w = torch.randn(40, 192, dtype=FP16, device=device)
    assert_matches_reference(gemm(x, w, variant=variant), gemm_ref, x, w)
    p, s, z = quantize_w4(w, 64)
    assert_matches_reference(
        w4a16_gemm(x, p, s, z, 64, variant=variant), w4a16_gemm_ref, x, p, s, z, 64
    )
    q8, s8 = quantize_w8(w, 64)
    assert_matches_reference(
        w8a16_gemm(x, q8, s8, 64, variant=variant), w8a16_gemm_ref, x, q8, s8, 64
    )
    q, k, v = (torch.randn(1, h, 45, 64, dtype=FP16, device=device) for h in (4, 2, 2))
    assert_matches_reference(
        flash_attention(q, k, v, variant=variant), flash_attention_ref, q, k, v
    )


def test_unknown_variant_is_refused() -> None:
    x = torch.randn(2, 32, dtype=FP16)
    with pytest.raises(AssertionError, match="variant must be one of"):
        gemm(x, torch.randn(8, 32, dtype=FP16), variant="v3")


# Production shapes (Llama-3-8B projections at decode batch), on a GPU only.
PRODUCTION = [(1, 4096, 4096), (16, 6144, 4096), (8, 28672, 4096), (4, 4096, 14336)]


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["v1", "v2"])
@pytest.mark.parametrize(("m", "n", "k"), PRODUCTION)
def test_quantised_gemms_at_production_shapes_on_gpu(m, n, k, variant, device) -> None:
    dtype = torch.bfloat16
    x = torch.randn(m, k, dtype=dtype, device=device)
    w = torch.randn(n, k, dtype=dtype, device=device) / k**0.5
    p, s, z = quantize_w4(w, 128)
    out = w4a16_gemm(x, p, s, z, 128, variant=variant)
    assert_matches_reference(out, w4a16_gemm_ref, x, p, s, z, 128)
    q8, s8 = quantize_w8(w, 128)
    out = w8a16_gemm(x, q8, s8, 128, variant=variant)
    assert_matches_reference(out, w8a16_gemm_ref, x, q8, s8, 128)
    out = gemm(x, w, variant=variant)
    assert_matches_reference(out, gemm_ref, x, w)


@pytest.mark.gpu
def test_fp8_decode_at_a_production_shape_on_gpu(device: str) -> None:
    if torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("fp8 conversion needs compute capability 8.9")
    q = torch.randn(8, 32, 128, dtype=torch.bfloat16, device=device)
    (k8, ks), (v8, vs) = (_fp8_cache((8, 8, 16384, 128), device) for _ in "kv")
    lens = torch.full((8,), 16384, dtype=torch.int32, device=device)
    out = decode_attention(q, k8, v8, lens.clone(), k_scale=ks, v_scale=vs)
    k, v = k8.to(torch.bfloat16) * ks, v8.to(torch.bfloat16) * vs
    assert_matches_reference(out, decode_attention_ref, q, k, v, lens)
