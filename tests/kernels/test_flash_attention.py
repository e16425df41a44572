"""Tests for kernels/flash_attention.py: causal GQA prefill against torch, contract and cost."""

from __future__ import annotations

import pytest
import torch
from kernel_tolerances import DTYPES, assert_matches_reference, poisoned

from rooflens.kernels.flash_attention import (
    flash_attention,
    flash_attention_cost,
    flash_attention_ref,
)

# (batch, n_heads, n_kv_heads, seq_len, head_dim): GQA groups of 2, 1 (MHA) and 2 (MQA with
# H = 2); sequence lengths that are not multiples of any tile, and a single token.
SHAPES = [(2, 4, 2, 33, 64), (1, 2, 1, 70, 128), (1, 3, 3, 1, 64)]


def _qkv(batch, n_heads, n_kv_heads, seq_len, head_dim, dtype, device):
    q = torch.randn(batch, n_heads, seq_len, head_dim, dtype=dtype, device=device)
    k = torch.randn(batch, n_kv_heads, seq_len, head_dim, dtype=dtype, device=device)
    v = torch.randn(batch, n_kv_heads, seq_len, head_dim, dtype=dtype, device=device)
    return q, k, v


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_flash_attention_matches_reference(shape, dtype: torch.dtype, device: str) -> None:
    q, k, v = _qkv(*shape, dtype, device)
    out = poisoned(q.shape, dtype, device)
    assert flash_attention(q, k, v, out=out) is out
    assert_matches_reference(out, flash_attention_ref, q, k, v)


def test_flash_attention_accepts_bshd_views_and_custom_scale(device: str) -> None:
    # Projections usually come out [B, S, H, D]; the kernel takes the transposed view as is.
    batch, seq_len, n_heads, n_kv_heads, head_dim = 2, 45, 4, 1, 64
    q = torch.randn(batch, seq_len, n_heads, head_dim, dtype=torch.float16, device=device)
    k = torch.randn(batch, seq_len, n_kv_heads, head_dim, dtype=torch.float16, device=device)
    v = torch.randn(batch, seq_len, n_kv_heads, head_dim, dtype=torch.float16, device=device)
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B, H, S, D], not contiguous
    result = flash_attention(q, k, v, sm_scale=0.3)
    assert_matches_reference(result, flash_attention_ref, q, k, v, sm_scale=0.3)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_flash_attention_long_sequence_on_gpu(head_dim: int, dtype: torch.dtype, device: str):
    q, k, v = _qkv(2, 8, 2, 1023, head_dim, dtype, device)
    assert_matches_reference(flash_attention(q, k, v), flash_attention_ref, q, k, v)


@pytest.mark.parametrize(
    ("q_shape", "kv_shape", "kv_dtype", "match"),
    [
        ((1, 4, 8, 64), (1, 3, 8, 64), torch.float16, "must divide"),
        ((1, 4, 8, 48), (1, 2, 8, 48), torch.float16, "head_dim"),
        ((1, 4, 8, 64), (1, 2, 9, 64), torch.float16, "k and v must be"),
        ((1, 4, 8, 64), (1, 2, 8, 64), torch.float32, "dtypes differ"),
    ],
)
def test_flash_attention_rejects_bad_inputs(q_shape, kv_shape, kv_dtype, match) -> None:
    q = torch.randn(q_shape, dtype=torch.float16)
    k = torch.randn(kv_shape, dtype=kv_dtype)
    with pytest.raises(AssertionError, match=match):
        flash_attention(q, k, k.clone())


def test_flash_attention_rejects_strided_head_dim() -> None:
    q = torch.randn(1, 2, 8, 128, dtype=torch.float16)[..., ::2]
    with pytest.raises(AssertionError, match="contiguous"):
        flash_attention(q, q, q)


def test_flash_attention_cost_closed_form() -> None:
    batch, seq_len, n_heads, n_kv_heads, head_dim = 2, 33, 4, 2, 64
    flops, bytes_ = flash_attention_cost(batch, seq_len, n_heads, n_kv_heads, head_dim, "fp16")
    assert flops == 4 * batch * n_heads * head_dim * (seq_len * (seq_len + 1) // 2)
    assert bytes_ == 2 * (2 * batch * seq_len * head_dim * (n_heads + n_kv_heads))


def test_flash_attention_cost_counts_the_causal_mask() -> None:
    # Second route: count the visible (query, key) pairs in the reference's mask.
    batch, seq_len, n_heads, head_dim = 3, 17, 2, 32
    visible = torch.ones(seq_len, seq_len).tril().sum().item()
    flops, _ = flash_attention_cost(batch, seq_len, n_heads, 1, head_dim, "fp32")
    assert flops == batch * n_heads * visible * 2 * (2 * head_dim)


def test_flash_attention_cost_kv_bytes_follow_kv_heads() -> None:
    mha = flash_attention_cost(1, 128, 32, 32, 128, "bf16")
    gqa = flash_attention_cost(1, 128, 32, 8, 128, "bf16")
    assert mha[0] == gqa[0]
    qo_bytes = 2 * 128 * 128 * 32 * 2
    assert gqa[1] - qo_bytes == (mha[1] - qo_bytes) // 4
