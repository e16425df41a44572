"""Tests for kernels/paged_decode_attention.py: paged decode against torch and against the
contiguous decode kernel on the same data, contract and cost."""

from __future__ import annotations

import pytest
import torch
from kernel_tolerances import DTYPES, assert_matches_reference, poisoned

from rooflens.kernels.decode_attention import decode_attention, decode_attention_cost
from rooflens.kernels.paged_decode_attention import (
    paged_decode_attention,
    paged_decode_attention_cost,
    paged_decode_attention_ref,
)


def _paged_inputs(n_heads, n_kv_heads, head_dim, kv_lens, block_size, dtype, device):
    """A shuffled pool of blocks (more than needed) and a block table into it."""
    batch = len(kv_lens)
    max_blocks = max(-(-n // block_size) for n in kv_lens) + 1  # one spare column
    num_blocks = batch * max_blocks + 3
    k_cache = torch.randn(num_blocks, block_size, n_kv_heads, head_dim, dtype=dtype, device=device)
    v_cache = torch.randn(num_blocks, block_size, n_kv_heads, head_dim, dtype=dtype, device=device)
    order = torch.randperm(num_blocks, device=device)[: batch * max_blocks]
    block_table = order.reshape(batch, max_blocks).to(torch.int32)
    q = torch.randn(batch, n_heads, head_dim, dtype=dtype, device=device)
    lens = torch.tensor(kv_lens, dtype=torch.int32, device=device)
    return q, k_cache, v_cache, block_table, lens


# (n_heads, n_kv_heads, head_dim, kv_lens, block_size, num_splits): pages smaller than, equal
# to, and larger than the kernel's KV tile; ragged lengths ending mid-page.
CASES = [
    (8, 2, 64, [71, 1, 33], 16, 3),
    (4, 1, 128, [40, 17], 8, None),
    (4, 4, 64, [100], 64, 2),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=["page16", "page8", "page64"])
def test_paged_decode_attention_matches_reference(case, dtype: torch.dtype, device: str) -> None:
    *shape, kv_lens, block_size, num_splits = case
    q, k_cache, v_cache, table, lens = _paged_inputs(*shape, kv_lens, block_size, dtype, device)
    out = poisoned(q.shape, dtype, device)
    result = paged_decode_attention(
        q, k_cache, v_cache, table, lens, num_splits=num_splits, out=out
    )
    assert result is out
    assert_matches_reference(out, paged_decode_attention_ref, q, k_cache, v_cache, table, lens)


def test_paged_matches_contiguous_decode(device: str) -> None:
    # Second route: lay a contiguous cache out in pages and compare the two kernels.
    batch, n_heads, n_kv_heads, capacity, head_dim, block_size = 2, 4, 2, 48, 64, 16
    k = torch.randn(batch, n_kv_heads, capacity, head_dim, device=device)
    v = torch.randn(batch, n_kv_heads, capacity, head_dim, device=device)
    q = torch.randn(batch, n_heads, head_dim, device=device)
    lens = torch.tensor([48, 29], dtype=torch.int32, device=device)
    pages_per_seq = capacity // block_size

    def to_pages(cache):  # [B, H_kv, S, D] -> [B · pages, block_size, H_kv, D]
        paged = cache.transpose(1, 2).reshape(
            batch, pages_per_seq, block_size, n_kv_heads, head_dim
        )
        return paged.flatten(0, 1).contiguous()

    table = torch.arange(batch * pages_per_seq, dtype=torch.int32, device=device)
    table = (
        table.reshape(batch, pages_per_seq).flip(0).contiguous()
    )  # sequence 0 uses the last pages
    k_pages, v_pages = to_pages(k.flip(0)), to_pages(v.flip(0))
    paged = paged_decode_attention(q, k_pages, v_pages, table, lens, num_splits=2)
    dense = decode_attention(q, k, v, lens, num_splits=2)
    torch.testing.assert_close(paged, dense, rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_paged_decode_attention_long_ragged_batch_on_gpu(dtype: torch.dtype, device: str) -> None:
    inputs = _paged_inputs(32, 8, 128, [4099, 1, 2048, 777], 16, dtype, device)
    result = paged_decode_attention(*inputs)
    assert_matches_reference(result, paged_decode_attention_ref, *inputs)


def test_paged_decode_attention_rejects_bad_inputs() -> None:
    q, k_cache, v_cache, table, lens = _paged_inputs(4, 2, 64, [5, 20], 16, torch.float16, "cpu")
    with pytest.raises(AssertionError, match="block_table must be int32"):
        paged_decode_attention(q, k_cache, v_cache, table.long(), lens)
    with pytest.raises(AssertionError, match="block_table must be"):
        paged_decode_attention(q, k_cache, v_cache, table[:1], lens)
    with pytest.raises(AssertionError, match="kv_lens must be int32"):
        paged_decode_attention(q, k_cache, v_cache, table, lens.long())
    with pytest.raises(AssertionError, match="k_cache must be"):
        paged_decode_attention(q, k_cache[0], v_cache[0], table, lens)


def test_paged_decode_attention_cost_adds_block_table_reads() -> None:
    lens, block_size = [71, 1, 33], 16
    flops, bytes_ = paged_decode_attention_cost(3, lens, 8, 2, 64, "fp16", block_size=block_size)
    dense_flops, dense_bytes = decode_attention_cost(3, lens, 8, 2, 64, "fp16")
    assert flops == dense_flops
    assert bytes_ - dense_bytes == 4 * (5 + 1 + 3)  # ceil(71/16), ceil(1/16), ceil(33/16)
