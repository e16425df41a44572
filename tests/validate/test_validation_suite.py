"""Suite shapes come from the models' operator tables (per-GPU widths at each TP degree)."""

from __future__ import annotations

from rooflens.validate.suite import (
    cpu_suite,
    full_suite,
    gpu_quick_suite,
    scenario_rows,
    working_set_bytes,
)


def _by_name(rows):
    return {(r["name"], r["kernel"]): r for r in rows}


def test_llama3_8b_widths_follow_tensor_parallelism():
    # Llama-3-8B: D 4096, 32 heads, 8 KV heads, head_dim 128, F 14336 (gated).
    tp1 = _by_name(scenario_rows("llama-3-8b", 1, "prefill", 1, 512, 512))
    assert (tp1[("attn.qkv_proj", "gemm")]["n"], tp1[("attn.qkv_proj", "gemm")]["k"]) == (
        6144,
        4096,
    )
    assert tp1[("mlp.up_gate", "gemm")]["n"] == 2 * 14336
    tp8 = _by_name(scenario_rows("llama-3-8b", 8, "prefill", 1, 512, 512))
    assert tp8[("attn.qkv_proj", "gemm")]["n"] == (4 + 2 * 1) * 128
    assert tp8[("mlp.down", "gemm")]["k"] == 14336 // 8
    attn = tp8[("attn.core", "flash_attention")]
    assert (attn["n_heads"], attn["n_kv_heads"], attn["seq_len"]) == (4, 1, 512)


def test_decode_rows_use_batch_and_kv_length():
    rows = _by_name(scenario_rows("llama-2-70b", 4, "decode", 32, 1, 4096))
    assert rows[("attn.qkv_proj", "gemm")]["m"] == 32
    for kernel in ("decode_attention", "paged_decode_attention"):
        attn = rows[("attn.core", kernel)]
        assert (attn["batch"], attn["kv_len"], attn["n_heads"], attn["n_kv_heads"]) == (
            32,
            4096,
            16,
            2,
        )
    assert rows[("norm.attn", "rmsnorm")]["rows"] == 32


def test_full_suite_respects_the_memory_budget_and_covers_every_kernel():
    suite = full_suite(memory_budget_bytes=8e9)
    assert working_set_bytes(suite).max() <= 8e9
    kernels = {"gemm", "w8a16_gemm", "w4a16_gemm", "flash_attention", "decode_attention",
               "paged_decode_attention", "rmsnorm"}  # fmt: skip
    assert set(suite["kernel"]) == kernels
    keys = ["kernel", "op", "m", "n", "k", "batch", "seq_len", "kv_len", "n_heads",
            "n_kv_heads", "rows", "hidden", "weight_dtype"]  # fmt: skip
    assert not suite.duplicated(keys).any()
    assert len(gpu_quick_suite()) < len(suite) / 10
    assert set(cpu_suite()["dtype"]) == {"fp32"}
