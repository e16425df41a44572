"""fusion: RoPE, SwiGLU and RMSNorm fused into neighbouring GEMMs remove exactly their
activation round trips (and the norm weights, FlashNorm), keeping all work."""

from __future__ import annotations

import pytest
from stack_checks import assert_same_prediction, predict, scenario, step_ops, total

from rooflens.model.predict.steps import Step

L, D, H, KV, DH, F = 32, 4096, 32, 8, 128, 14336  # Llama-3-8B


def test_saved_bytes_closed_form() -> None:
    sc = scenario("llama-3-8b", batch=2, prompt_len=300, output_len=2)
    step = Step("prefill", 2.0, 300.0, 300.0)
    n, b = 2 * 300, 2
    base, fused = step_ops(sc, [], step), step_ops(sc, ["fusion"], step)
    rope = 2 * n * (H + KV) * DH * b  # the rope op's read and write
    act = n * (2 * F + F) * b + n * F * b  # act op's read and write + the up GEMM's halved output
    norms = 2 * n * D * b + 2 * D * 2  # per layer: two normalised outputs, two weight vectors
    final = n * D * b + D * 2
    expected = L * (rope + act + norms) + final
    assert total(base, "bytes") - total(fused, "bytes") == pytest.approx(expected)


def test_work_is_moved_not_dropped() -> None:
    sc = scenario("llama-3-8b", batch=2, prompt_len=300, output_len=2)
    for step in (Step("prefill", 2.0, 300.0, 300.0), Step("decode", 2.0, 1.0, 310.0)):
        base, fused = step_ops(sc, [], step), step_ops(sc, ["fusion"], step)
        work = total(base, "flops") + total(base, "vector_flops")
        assert total(fused, "flops") + total(fused, "vector_flops") == pytest.approx(work)
        assert {op.name for op in base} - {op.name for op in fused} == {"attn.rope", "mlp.act"}


def test_fewer_kernels_pay_less_launch_overhead() -> None:
    sc = scenario("llama-3-8b", batch=1, prompt_len=256, output_len=16, profile="calibrated")
    assert predict(sc, ["fusion"]).tpot_s < predict(sc).tpot_s
    ideal = scenario("llama-3-8b", batch=8, prompt_len=2048, output_len=2)
    assert predict(ideal, ["fusion"]).ttft_s < predict(ideal).ttft_s


def test_layernorm_models_keep_their_norms() -> None:
    sc = scenario("opt-13b", "a100-sxm-80gb", batch=1, prompt_len=256, output_len=2)
    step = Step("prefill", 1.0, 256.0, 256.0)
    norms = [op for op in step_ops(sc, ["fusion"], step) if op.kind == "norm"]
    assert norms == [op for op in step_ops(sc, [], step) if op.kind == "norm"]


def test_all_off_is_the_identity() -> None:
    sc = scenario("llama-3-8b", batch=2, prompt_len=256, output_len=16)
    assert_same_prediction(predict(sc, ["fusion:rope=false,act=false,norm=false"]), predict(sc))
