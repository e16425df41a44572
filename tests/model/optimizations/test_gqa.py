"""gqa / mqa: KV bytes, KV-projection weights and FLOPs follow the KV-head count
(Ainslie et al. 2023; Shazeer 2019), the rest stays."""

from __future__ import annotations

import pytest
from stack_checks import assert_same_prediction, named, predict, scenario, step_ops, total

from rooflens.hardware.errors import RooflensError
from rooflens.model.predict.memory import kv_bytes_per_token
from rooflens.model.predict.steps import Step

D, H, DH, L = 4096, 32, 128, 32  # Llama-2-7B


def test_kv_bytes_per_token_closed_form() -> None:
    # 2 · N · Dh · layers · 2 bytes (bf16)
    pipeline_sc = scenario().model_copy()
    from rooflens.model.predict.api import make_pipeline

    converted = make_pipeline(pipeline_sc, ["gqa:kv_heads=8"]).scenario
    assert kv_bytes_per_token(converted) == 2 * 8 * DH * L * 2 == 131_072
    mqa = make_pipeline(pipeline_sc, ["mqa"]).scenario
    assert kv_bytes_per_token(mqa) == 2 * 1 * DH * L * 2


def test_qkv_projection_weights_and_flops() -> None:
    sc = scenario(batch=3, prompt_len=64, output_len=2)
    step = Step("decode", 3.0, 1.0, 70.0)
    qkv = named(step_ops(sc, ["gqa:kv_heads=8"], step), "attn.qkv_proj")
    assert qkv.weight_bytes == D * (H + 2 * 8) * DH * 2
    assert qkv.flops == 2 * 3 * D * (H + 2 * 8) * DH


def test_attention_flops_unchanged_kv_reads_scale_with_heads() -> None:
    sc = scenario(batch=2, prompt_len=1000, output_len=2)
    step = Step("decode", 2.0, 1.0, 1001.0)
    mha = named(step_ops(sc, [], step), "attn.core")
    gqa = named(step_ops(sc, ["gqa:kv_heads=8"], step), "attn.core")
    assert gqa.flops == mha.flops
    assert gqa.kv_bytes == pytest.approx(mha.kv_bytes * 8 / 32)


def test_weight_memory_drops_by_the_kv_projections() -> None:
    sc = scenario(prompt_len=128, output_len=2)
    before, after = predict(sc).memory, predict(sc, ["gqa:kv_heads=4"]).memory
    # K and V projections: 2 · D · (32 − 4) · Dh weights per layer, 2 bytes each
    assert before.weights_bytes - after.weights_bytes == 2 * D * (32 - 4) * DH * L * 2
    assert after.max_batch > before.max_batch


def test_neutral_settings_are_the_identity() -> None:
    sc = scenario("llama-2-7b", batch=2, prompt_len=256, output_len=16)
    assert_same_prediction(predict(sc, ["gqa:kv_heads=32"]), predict(sc))
    sc8 = scenario("llama-3-8b", batch=2, prompt_len=256, output_len=16)
    assert_same_prediction(predict(sc8, ["gqa"]), predict(sc8))  # already 8 KV heads


def test_mqa_equals_gqa_with_one_head() -> None:
    sc = scenario(batch=4, prompt_len=300, output_len=20)
    a, b = predict(sc, ["mqa"]), predict(sc, ["gqa:kv_heads=1"])
    assert a.tpot_s == b.tpot_s and a.memory.kv_cache_bytes == b.memory.kv_cache_bytes
    ops = step_ops(sc, ["mqa"], Step("decode", 4.0, 1.0, 301.0))
    assert total(ops, "kv_bytes") < total(
        step_ops(sc, [], Step("decode", 4.0, 1.0, 301.0)), "kv_bytes"
    )


@pytest.mark.parametrize(
    ("model", "opt"), [("llama-2-7b", "gqa:kv_heads=3"), ("deepseek-v3", "gqa:kv_heads=8")]
)
def test_bad_conversions_are_one_line_errors(model: str, opt: str) -> None:
    with pytest.raises(RooflensError, match="gqa"):
        predict(scenario(model, "h200", prompt_len=64, output_len=2), [opt])
