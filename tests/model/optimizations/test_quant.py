"""Precisions and quant:scheme presets: weight bytes with scales and zero points, the compute
unit each scheme runs on, dequantization work, LLM.int8()'s two paths, KV-cache quantization."""

from __future__ import annotations

import math

import pytest
from stack_checks import assert_same_prediction, named, predict, scenario, step_ops, total

from rooflens.hardware.errors import RooflensError
from rooflens.model.predict.steps import Step
from rooflens.model.pricing.roofline import price_op
from rooflens.model.specs.params import count_params

D, F, V = 4096, 11008, 32000  # Llama-2-7B
LINEAR = ("attn.qkv_proj", "attn.o_proj", "mlp.up_gate", "mlp.down")
DECODE = Step("decode", 4.0, 1.0, 600.0)
PREFILL = Step("prefill", 1.0, 2048.0, 2048.0)


def linear_ops(sc, opts, step):  # type: ignore[no-untyped-def]
    return [op for op in step_ops(sc, opts, step) if op.name in LINEAR]


def test_int8_weights_halve_weight_bytes_and_leave_flops() -> None:
    bf16 = linear_ops(scenario(), [], DECODE)
    int8 = linear_ops(scenario(weight_dtype="int8"), [], DECODE)
    for a, b in zip(bf16, int8, strict=True):
        assert b.flops == a.flops
        # 1 byte per weight plus one fp16 scale per group of 128 (ops.py weight_storage_bytes)
        assert b.weight_bytes == pytest.approx(a.weight_bytes / 2 * (1 + 2 / 128))


def test_awq_weight_bytes_closed_form() -> None:
    # int4 (0.5 B) + fp16 scale + packed 4-bit zero per group of 128: 0.5 + 2.5/128 B per weight
    ops = linear_ops(scenario(), ["quant:scheme=awq"], DECODE)
    up = next(op for op in ops if op.name == "mlp.up_gate")
    assert up.weight_bytes == pytest.approx(2 * F * D * (0.5 + 2.5 / 128))
    assert {op.compute_dtype for op in ops} == {"bf16"}


def test_awq_memory_closed_form_from_param_counts() -> None:
    sc = scenario(prompt_len=128, output_len=2)
    pc = count_params(sc.model)
    linear = pc.layers - pc.n_layers * pc.norms_per_layer
    plain = pc.total - linear  # embeddings, lm_head, norms stay bf16
    mem = predict(sc, ["quant:scheme=awq"]).memory
    assert mem.weights_bytes == pytest.approx(linear * (0.5 + 2.5 / 128) + plain * 2)


def test_weight_only_int4_keeps_the_16_bit_peak_and_pays_dequantization() -> None:
    sc = scenario(prompt_len=2048, output_len=2)
    bf16 = named(step_ops(sc, [], PREFILL), "mlp.up_gate")
    awq = named(step_ops(sc, ["quant:scheme=awq"], PREFILL), "mlp.up_gate")
    assert awq.compute_dtype == bf16.compute_dtype == "bf16"
    # Marlin-style dequantization: 2 CUDA-core ops per weight per 64-row tile
    assert awq.vector_flops == 2 * (2 * F) * D * math.ceil(2048 / 64)
    p_bf16, p_awq = (price_op(op, sc.system, _ideal(sc)) for op in (bf16, awq))
    # never faster in the compute-bound regime; the dequantization overlaps the MMAs (MARLIN
    # §3), so the ideal bound is the bf16 time itself (TensorRT-LLM's A100 W4A16 at M = 8192,
    # N = K = 4096: 1.09 ms, bf16 1.04 ms; calibrated, the int4_wo family's own terms carry it)
    assert p_awq.compute_s >= p_bf16.compute_s and p_awq.time_s >= p_bf16.time_s
    assert p_awq.memory_s < p_bf16.memory_s


def _ideal(sc):  # type: ignore[no-untyped-def]
    from rooflens.hardware.profiles import IDEAL

    return IDEAL


def test_smoothquant_runs_on_the_int8_unit_with_8_bit_inputs() -> None:
    sc = scenario("llama-2-7b", "h100-sxm", prompt_len=2048, output_len=2)
    bf16 = named(step_ops(sc, [], PREFILL), "mlp.up_gate")
    w8a8 = named(step_ops(sc, ["quant:scheme=smoothquant"], PREFILL), "mlp.up_gate")
    assert w8a8.compute_dtype == "int8" and w8a8.flops == bf16.flops
    assert w8a8.vector_flops == 0.0
    # X read at 1 byte instead of 2; the output stays 16-bit
    assert bf16.act_bytes - w8a8.act_bytes == 2048 * D * 1
    ratio = (
        price_op(w8a8, sc.system, _ideal(sc)).compute_s
        / price_op(bf16, sc.system, _ideal(sc)).compute_s
    )
    assert ratio == pytest.approx(sc.gpu.peak("bf16") / sc.gpu.peak("int8"))


def test_fp8_without_fp8_units_is_refused_and_int8_without_int8_units_falls_back() -> None:
    # no engine runs W8A8-FP8 without FP8 tensor cores (vLLM serves FP8 weight-only there)
    sc = scenario("llama-2-7b", "a100-sxm-80gb", prompt_len=256, output_len=4)
    with pytest.raises(RooflensError, match="scheme=fp8 needs FP8 tensor cores"):
        predict(sc, ["quant:scheme=fp8"])
    h100 = predict(
        scenario("llama-2-7b", "h100-sxm", prompt_len=256, output_len=4), ["quant:scheme=fp8"]
    )
    assert not [n for n in h100.notes if not n.startswith("accuracy:")]  # no fallback note
    # Blackwell Ultra cut INT8 tensor math: SmoothQuant runs on the fallback unit, and says so
    b300 = predict(
        scenario("llama-2-7b", "b300", prompt_len=256, output_len=4), ["quant:scheme=smoothquant"]
    )
    assert any("no int8 tensor cores" in n for n in b300.notes)


def test_llm_int8_pays_for_both_paths() -> None:
    sc = scenario("llama-2-7b", "a100-sxm-80gb", batch=4, prompt_len=256, output_len=16)
    f = 0.01
    ops = step_ops(sc, [f"quant:scheme=llm.int8,outlier_fraction={f}"], DECODE)
    dense = named(step_ops(sc, [], DECODE), "mlp.down")
    main, outliers = named(ops, "mlp.down"), named(ops, "mlp.down.outliers")
    assert main.flops + outliers.flops == pytest.approx(dense.flops)  # no FLOPs lost
    assert outliers.flops == pytest.approx(f * dense.flops)
    assert main.compute_dtype == "int8" and outliers.compute_dtype == "bf16"
    assert named(ops, "mlp.down.int8_quant").kind == "elementwise"
    smooth = predict(sc, ["quant:scheme=smoothquant"])
    assert predict(sc, ["quant:scheme=llm.int8"]).tpot_s > smooth.tpot_s


def test_kv_cache_quantization_halves_cache_traffic() -> None:
    bf16 = named(step_ops(scenario(), [], DECODE), "attn.core")
    int8 = named(step_ops(scenario(kv_dtype="int8"), [], DECODE), "attn.core")
    assert int8.kv_bytes == pytest.approx(bf16.kv_bytes / 2)
    assert int8.flops == bf16.flops
    # JAX scaling book (anchor E5): Llama-3-70B int8 KV = 163,840 B per token
    assert (
        predict(
            scenario("llama-3-70b", "h200", kv_dtype="int8", output_len=1)
        ).memory.kv_bytes_per_token
        == 163_840
    )


def test_scheme_none_is_the_identity() -> None:
    sc = scenario(batch=2, prompt_len=300, output_len=20)
    assert_same_prediction(predict(sc, ["quant:scheme=none"]), predict(sc))


def test_gptq_8_bit_and_group_size() -> None:
    ops = linear_ops(scenario(), ["quant:scheme=gptq,bits=8,group=64"], DECODE)
    up = next(op for op in ops if op.name == "mlp.up_gate")
    assert up.weight_bytes == pytest.approx(2 * F * D * (1 + 3 / 64))  # scale 2 B + zero 1 B
    assert total(ops, "flops") == total(linear_ops(scenario(), [], DECODE), "flops")


@pytest.mark.parametrize(
    "opt", ["quant:scheme=int3", "quant:scheme=awq,bits=3", "quant:scheme=fp8,bits=4"]
)
def test_bad_parameters_are_one_line_errors(opt: str) -> None:
    with pytest.raises(RooflensError, match="quant"):
        predict(scenario(output_len=2), [opt])
