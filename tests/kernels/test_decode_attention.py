"""Tests for kernels/decode_attention.py: split-KV decode against torch, contract and cost."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from kernel_tolerances import DTYPES, assert_matches_reference, poisoned

from rooflens.kernels.decode_attention import (
    decode_attention,
    decode_attention_cost,
    decode_attention_ref,
)
from rooflens.kernels.split_kv import decode_workspace

# (n_heads, n_kv_heads, capacity, head_dim, kv_lens, num_splits): ragged batches including a
# sequence of length 1, GQA groups of 4, 1 and 6, and splits that leave some chunks empty.
CASES = [
    (8, 2, 80, 64, [71, 1, 40], 3),
    (4, 4, 71, 128, [71, 17], None),
    (6, 1, 50, 64, [33], 1),
]


def _inputs(n_heads, n_kv_heads, capacity, head_dim, kv_lens, dtype, device):
    batch = len(kv_lens)
    q = torch.randn(batch, n_heads, head_dim, dtype=dtype, device=device)
    k = torch.randn(batch, n_kv_heads, capacity, head_dim, dtype=dtype, device=device)
    v = torch.randn(batch, n_kv_heads, capacity, head_dim, dtype=dtype, device=device)
    lens = torch.tensor(kv_lens, dtype=torch.int32, device=device)
    return q, k, v, lens


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=["gqa4-split3", "mha-default", "mqa-split1"])
def test_decode_attention_matches_reference(case, dtype: torch.dtype, device: str) -> None:
    *shape, kv_lens, num_splits = case
    q, k, v, lens = _inputs(*shape, kv_lens, dtype, device)
    out = poisoned(q.shape, dtype, device)
    workspace = None
    if num_splits is not None:
        workspace = decode_workspace(q, num_splits)
        for buffer in workspace:
            buffer.fill_(float("nan"))
    assert decode_attention(q, k, v, lens, out=out, workspace=workspace) is out
    assert_matches_reference(out, decode_attention_ref, q, k, v, lens)


def test_decode_attention_does_not_depend_on_num_splits(device: str) -> None:
    q, k, v, lens = _inputs(4, 2, 96, 64, [96, 50, 3], torch.float32, device)
    one = decode_attention(q, k, v, lens, num_splits=1)
    many = decode_attention(q, k, v, lens, num_splits=5)
    torch.testing.assert_close(one, many, rtol=1e-5, atol=1e-6)


def test_decode_attention_ignores_cache_past_kv_len(device: str) -> None:
    q, k, v, lens = _inputs(4, 2, 64, 64, [20, 37], torch.float16, device)
    before = decode_attention(q, k, v, lens)
    k[:, :, 40:] = float("nan")
    v[0, :, 20:] = float("nan")
    torch.testing.assert_close(decode_attention(q, k, v, lens), before, rtol=0, atol=0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_decode_attention_long_ragged_batch_on_gpu(dtype: torch.dtype, device: str) -> None:
    q, k, v, lens = _inputs(32, 8, 4099, 128, [4099, 1, 2048, 777], dtype, device)
    assert_matches_reference(decode_attention(q, k, v, lens), decode_attention_ref, q, k, v, lens)


def test_decode_attention_rejects_bad_inputs() -> None:
    q, k, v, lens = _inputs(4, 2, 16, 64, [5, 7], torch.float16, "cpu")
    with pytest.raises(AssertionError, match="kv_lens must be int32"):
        decode_attention(q, k, v, lens.long())
    with pytest.raises(AssertionError, match="must divide"):
        decode_attention(q[:, :3], k, v, lens)
    with pytest.raises(AssertionError, match="cache dtype"):
        decode_attention(q, k.float(), v.float(), lens)
    with pytest.raises(AssertionError, match="does not match cache"):
        decode_attention(q[:1], k, v, lens)
    with pytest.raises(AssertionError, match="workspace"):
        decode_attention(q, k, v, lens, workspace=decode_workspace(q[:, :2], 2))


def test_decode_attention_cost_closed_form() -> None:
    batch, kv_len, n_heads, n_kv_heads, head_dim = 3, 71, 8, 2, 64
    flops, bytes_ = decode_attention_cost(batch, kv_len, n_heads, n_kv_heads, head_dim, "fp16")
    assert flops == 4 * batch * n_heads * head_dim * kv_len
    assert bytes_ == 2 * (
        2 * batch * n_heads * head_dim + 2 * batch * n_kv_heads * kv_len * head_dim
    )


def test_decode_attention_cost_ragged_and_kv_dtype() -> None:
    ragged = decode_attention_cost(3, [71, 1, 40], 8, 2, 64, "fp16")
    assert ragged[0] == 4 * 8 * 64 * (71 + 1 + 40)
    uniform = decode_attention_cost(2, 50, 8, 2, 64, "fp16")
    assert uniform == decode_attention_cost(2, [50, 50], 8, 2, 64, "fp16")
    # An int8 cache halves the cache bytes and leaves q/out and FLOPs alone.
    int8_cache = decode_attention_cost(2, 50, 8, 2, 64, "fp16", kv_dtype="int8")
    qo_bytes = 2 * 2 * 8 * 64 * 2
    assert int8_cache[0] == uniform[0]
    assert int8_cache[1] - qo_bytes == (uniform[1] - qo_bytes) // 2


def test_decode_attention_cost_charges_kv_heads_not_query_heads() -> None:
    # The LLM-Viewer bug (STYLE.md): cache bytes must follow H_kv.
    gqa = decode_attention_cost(1, 4096, 32, 8, 128, "bf16")
    mha = decode_attention_cost(1, 4096, 32, 32, 128, "bf16")
    qo_bytes = 2 * 32 * 128 * 2
    assert mha[1] - qo_bytes == 4 * (gqa[1] - qo_bytes)


@given(
    batch=st.integers(1, 64),
    kv_len=st.integers(1, 32768),
    n_kv_heads=st.integers(1, 16),
    group=st.integers(1, 8),
    head_dim=st.sampled_from([64, 128, 256]),
)
def test_decode_attention_cost_invariants(batch, kv_len, n_kv_heads, group, head_dim) -> None:
    n_heads = n_kv_heads * group
    flops, bytes_ = decode_attention_cost(batch, kv_len, n_heads, n_kv_heads, head_dim, "bf16")
    mha_flops, mha_bytes = decode_attention_cost(batch, kv_len, n_heads, n_heads, head_dim, "bf16")
    longer = decode_attention_cost(batch, kv_len + 1, n_heads, n_kv_heads, head_dim, "bf16")
    qo_bytes = 2 * batch * n_heads * head_dim * 2
    assert flops == mha_flops  # GQA saves bytes, not FLOPs
    assert (mha_bytes - qo_bytes) == group * (bytes_ - qo_bytes)  # cache bytes follow H_kv
    assert longer[0] > flops and longer[1] > bytes_
