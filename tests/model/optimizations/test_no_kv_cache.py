"""no-kv-cache against the LLM inference book ch. 20.2.2 closed forms (anchor E7, no-cache
column), its quadratic total, and what it leaves alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from stack_checks import predict, scenario, step_ops, total

from rooflens.model.predict.steps import Step
from rooflens.model.specs.presets import get_model

# The GPT-style model of the book's table (MHA, FFN 4d, no gating): tests/model/fixtures.
GPT = get_model(str(Path(__file__).resolve().parents[1] / "fixtures" / "gpt-style.yaml"))


@pytest.mark.parametrize(("b", "s"), [(1, 1), (1, 100), (8, 1000), (4, 2048)])
def test_step_flops_match_the_book_without_cache(b: int, s: int) -> None:
    # LLM inference book ch. 20.2.2, no-cache column: (24·b·s·d² + 4·b·d·s²)·L + 2·b·s·d·V.
    # GEMMs match term by term; attention counts causal pairs s(s+1)/2 instead of s².
    d, L, V = GPT.d_model, GPT.n_layers, GPT.vocab_size
    sc = scenario(GPT, "a100-sxm-80gb", batch=b, prompt_len=1, output_len=1)
    ops = step_ops(sc, ["no-kv-cache"], Step("decode", float(b), 1.0, float(s)))
    assert total(ops, "flops", ["gemm"]) == pytest.approx(24 * b * s * d**2 * L + 2 * b * s * d * V)
    assert total(ops, "flops", ["attention"]) == pytest.approx(4 * b * d * s * (s + 1) / 2 * L)


def test_gemm_flops_are_s_times_the_cached_step() -> None:
    # Book: "the KV cache reduces the cost to 1/s of the original" (for the s-independent part).
    sc = scenario(GPT, "a100-sxm-80gb", batch=2, prompt_len=1, output_len=1)
    step = Step("decode", 2.0, 1.0, 700.0)
    cached = total(step_ops(sc, [], step), "flops", ["gemm"])
    assert total(step_ops(sc, ["no-kv-cache"], step), "flops", ["gemm"]) == pytest.approx(
        700 * cached
    )


def test_decode_total_is_quadratic_in_length() -> None:
    # Σ over decode steps of a·s + c·s(s+1), s = P+1..P+O−1 (second route: the closed form).
    d, L, V, b = GPT.d_model, GPT.n_layers, GPT.vocab_size, 1
    sc = scenario(GPT, "a100-sxm-80gb", batch=b, prompt_len=8, output_len=500)
    lens = np.arange(9, 8 + 500, dtype=np.float64)
    ops = step_ops(sc, ["no-kv-cache"], Step("decode", 1.0, 1.0, lens))
    matmul = total(ops, "flops", ["gemm", "attention"])
    s = lens
    expected = np.sum((24 * b * s * d**2 + 2 * b * d * s * (s + 1)) * L + 2 * b * s * d * V)
    assert matmul == pytest.approx(expected)
    cached = total(step_ops(sc, [], Step("decode", 1.0, 1.0, lens)), "flops", ["gemm", "attention"])
    assert matmul / cached > 250  # ~ mean sequence length: quadratic against linear


def test_no_cache_traffic_and_no_cache_memory() -> None:
    sc = scenario("llama-2-7b", batch=4, prompt_len=256, output_len=64)
    step = Step("decode", 4.0, 1.0, 300.0)
    naive, cached = step_ops(sc, ["no-kv-cache"], step), step_ops(sc, [], step)
    assert total(naive, "kv_bytes") == 0.0
    assert total(cached, "kv_bytes") > 0.0
    # GEMM weights are still read once per step
    assert total(naive, "weight_bytes", ["gemm"]) == total(cached, "weight_bytes", ["gemm"])
    mem = predict(sc, ["no-kv-cache"]).memory
    assert mem.kv_cache_bytes == 0.0


def test_prefill_compute_unchanged_when_only_the_last_logits_are_kept() -> None:
    # The neutral case: prefill already runs every position, so only the cache write goes.
    sc = scenario("llama-3-8b", batch=2, prompt_len=300, output_len=2)
    step = Step("prefill", 2.0, 300.0, 300.0)
    naive = step_ops(sc, ["no-kv-cache:all_logits=false"], step)
    cached = step_ops(sc, [], step)
    assert total(naive, "flops") == pytest.approx(total(cached, "flops"))
    assert total(naive, "weight_bytes") == pytest.approx(total(cached, "weight_bytes"))
    assert total(naive, "bytes") < total(cached, "bytes")


def test_decode_without_cache_is_slower_and_unchunked() -> None:
    sc = scenario("llama-3-8b", batch=1, prompt_len=512, output_len=32)
    naive, cached = predict(sc, ["no-kv-cache"]), predict(sc)
    assert naive.tpot_s > cached.tpot_s
    # recomputing ~530 positions per step is compute-bound: at least FLOPs / bf16 peak
    mean_flops = naive.decode.flops
    assert naive.tpot_s >= mean_flops / sc.gpu.peak("bf16")
    assert naive.decode.bound == "compute" and cached.decode.bound == "memory"
    # without a cache the prompt cannot be chunked, so activations are sized for all B·P tokens
    big = scenario("llama-3-8b", batch=64, prompt_len=512, output_len=2)
    assert (
        predict(big, ["no-kv-cache"]).memory.activation_bytes > predict(big).memory.activation_bytes
    )
