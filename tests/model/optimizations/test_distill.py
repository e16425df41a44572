"""Distillation as a model swap (model/optimizations/distill.py)."""

from __future__ import annotations

import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations.distill import Distill, shallow_student
from rooflens.model.predict.api import make_scenario, run
from rooflens.model.specs.params import count_params
from rooflens.model.specs.spec import ModelSpec

# BERT-base's shapes (Devlin et al. 2019): 12 layers, D 768, 12 heads, FFN 3072, vocab 30522,
# 512 learned positions, LayerNorm, biases everywhere, tied output embedding.
BERT_BASE = ModelSpec(
    id="bert-base", name="BERT-base shapes", family="gpt", n_layers=12, d_model=768, n_heads=12,
    n_kv_heads=12, head_dim=64, d_ff=3072, gated_mlp=False, activation="gelu", vocab_size=30522,
    tied_embeddings=True, norm="layernorm", positional="learned", max_position_embeddings=512,
    linear_bias=True, attention="mha", max_context=512,
)  # fmt: skip


def test_distilbert_case() -> None:
    # DistilBERT (Sanh et al. 2019) keeps every other layer: "40% smaller". E6 closed form:
    # V·D + P·D + L·(12·D² + 13·D) (+ final norm), before and after.
    D, V, P = 768, 30522, 512
    teacher = V * D + P * D + 12 * (12 * D * D + 13 * D) + 2 * D
    student = V * D + P * D + 6 * (12 * D * D + 13 * D) + 2 * D
    assert count_params(BERT_BASE).total == teacher
    assert count_params(shallow_student(BERT_BASE, 0.5)).total == student
    assert 1 - student / teacher == pytest.approx(0.40, abs=0.015)


def test_layers_one_is_the_identity() -> None:
    sc = make_scenario("llama-2-7b", "a100-sxm-80gb", batch=2, prompt_len=128, output_len=16)
    assert run(sc, [Distill()]).to_dict() == run(sc).to_dict()


def test_student_swap_equals_running_the_student() -> None:
    kw = {"batch": 4, "prompt_len": 256, "output_len": 32}
    swapped = run(make_scenario("llama-3-70b", "h100-sxm", **kw), [Distill(student="llama-3-8b")])
    direct = run(make_scenario("llama-3-8b", "h100-sxm", **kw))
    assert swapped.tpot_s == pytest.approx(direct.tpot_s)
    assert swapped.ttft_s == pytest.approx(direct.ttft_s)
    assert swapped.memory.weights_bytes == pytest.approx(direct.memory.weights_bytes)


def test_half_depth_halves_layer_time() -> None:
    sc = make_scenario("llama-2-7b", "a100-sxm-80gb", batch=1, prompt_len=256, output_len=32)
    half = run(sc, [Distill(layers=0.5)])
    assert half.scenario.model.n_layers == 16
    assert 0.5 < half.tpot_s / run(sc).tpot_s < 0.53  # embedding and lm_head remain


def test_one_student_only() -> None:
    with pytest.raises(RooflensError, match="not both"):
        Distill(student="llama-3-8b", layers=0.5)
