"""Exact rows E1–E5, E7 and E8 of shared/data/anchors.md through the public API.

E6 and E9 (parameter counts) live in test_params.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.hardware.presets import get_gpu
from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.memory import kv_bytes_per_token
from rooflens.model.predict.steps import Step
from rooflens.model.specs.presets import get_model


def memory(model: str, gpu: str = "h200", **kw: object):
    sc = make_scenario(model, gpu, output_len=1, **kw)  # type: ignore[arg-type]
    return make_pipeline(sc).memory()


def test_e1_gpt3_kv_per_token_and_2048_tokens() -> None:
    # "Transformer inference tricks" (KV cache section): 2·96·96·128·2 B per token.
    sc = make_scenario("gpt3-175b", "h200", kv_dtype="fp16", act_dtype="fp16", tp=8)
    per_gpu = kv_bytes_per_token(sc)
    assert per_gpu * 8 == 2 * 96 * 96 * 128 * 2 == 4_718_592
    one = make_scenario("gpt3-175b", "h200", act_dtype="fp16", prompt_len=2048, output_len=1)
    assert kv_bytes_per_token(one) * 2048 == pytest.approx(9.66e9, rel=1e-3)


def test_e2_llama2_7b_kv_cache_batch_64_context_2048() -> None:
    # LLM inference book ch. 20, Example 20.2: 2·64·2048·4096·32·2 B.
    mem = memory("llama-2-7b", batch=64, prompt_len=2048, act_dtype="fp16")
    assert mem.kv_cache_bytes == 2 * 64 * 2048 * 4096 * 32 * 2 == 68_719_476_736
    mem1 = memory("llama-2-7b", batch=1, prompt_len=2048, act_dtype="fp16")
    assert mem1.kv_cache_bytes == pytest.approx(1.07e9, rel=5e-3)


def test_e3_opt13b_kv_per_token() -> None:
    # vLLM paper (Kwon et al., SOSP'23) §3: 2·5120·40·2 B = 800 KB; 2,048 tokens ≈ 1.6 GB.
    mem = memory("opt-13b", prompt_len=2048, act_dtype="fp16")
    assert mem.kv_bytes_per_token == 2 * 5120 * 40 * 2 == 819_200
    assert mem.kv_cache_bytes == pytest.approx(1.6e9, rel=0.05)


def test_e4_llama2_13b_kv_8192_tokens() -> None:
    # JAX scaling book, inference chapter: 6.71e9 B of bf16 KV for 8,192 tokens.
    sc = make_scenario("llama-2-13b", "h200", prompt_len=4096, output_len=1)
    assert kv_bytes_per_token(sc) * 8192 == pytest.approx(6.71e9, rel=1e-3)


def test_e5_llama3_70b_int8_kv_per_token() -> None:
    # JAX scaling book, applied inference: 80 layers · 2 · 8 KV heads · 128 · 1 B.
    sc = make_scenario("llama-3-70b", "h200", kv_dtype="int8", output_len=1)
    assert kv_bytes_per_token(sc) == 163_840


# The GPT-style model of the book's table (MHA, FFN 4d, no gating): tests/model/fixtures.
GPT_STYLE = get_model(str(Path(__file__).resolve().parents[1] / "fixtures" / "gpt-style.yaml"))


@pytest.mark.parametrize(("b", "l_kv"), [(1, 0), (1, 100), (8, 1000), (64, 2047)])
def test_e7_decode_flops_with_kv_cache(b: int, l_kv: int) -> None:
    # LLM inference book ch. 20.2.2: (24·b·d² + 4·b·d·(L_kv+1))·L + 2·b·d·V per decode step.
    d, L, V = GPT_STYLE.d_model, GPT_STYLE.n_layers, GPT_STYLE.vocab_size
    sc = make_scenario(GPT_STYLE, "a100-sxm-80gb", batch=b, prompt_len=1, output_len=1)
    ops = make_pipeline(sc).step_ops(Step("decode", float(b), 1.0, float(l_kv + 1)))
    matmul_flops = sum(o.flops * o.count for o in ops if o.kind in ("gemm", "attention"))
    expected = (24 * b * d**2 + 4 * b * d * (l_kv + 1)) * L + 2 * b * d * V
    assert matmul_flops == pytest.approx(expected, rel=1e-12)


def test_e8_a100_ridge_and_decode_intensity_tracks_batch() -> None:
    # "Towards 100x speedup" §1.1: 312 TFLOP/s / 2.039 TB/s ≈ 153 FLOP/byte.
    a100 = get_gpu("a100-sxm-80gb")
    assert a100.ridge_point("bf16") == pytest.approx(153, abs=0.5)
    for batch in (1, 16, 64, 128):
        pred = run(make_scenario("llama-2-7b", "a100-sxm-80gb", batch=batch, prompt_len=128))
        frame = pred.ops_frame()
        up = frame[(frame["phase"] == "decode") & (frame["name"] == "mlp.up_gate")].iloc[0]
        # bf16 decode GEMM: 2·B·N·K FLOPs over 2·(N·K + B·K + B·N) bytes -> intensity ≈ B
        # while weights dominate the traffic: B / (1 + B·(N + K) / (N·K)).
        n, k = 2 * 11008, 4096
        assert up["intensity"] == pytest.approx(batch / (1 + batch * (n + k) / (n * k)))
        assert up["intensity"] == pytest.approx(batch, rel=0.05)
        assert up["bound"] == "memory"  # below the ridge (~153)
    big = run(make_scenario("llama-2-7b", "a100-sxm-80gb", batch=256, prompt_len=128))
    frame = big.ops_frame()
    up = frame[(frame["phase"] == "decode") & (frame["name"] == "mlp.up_gate")].iloc[0]
    assert up["bound"] == "compute"
