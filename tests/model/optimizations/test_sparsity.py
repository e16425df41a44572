"""sparsity-2:4: the sparse tensor-core peak and compressed weights (values + 2-bit metadata)
where the GPU has sparse tensor cores; nothing where it does not."""

from __future__ import annotations

import pytest
from stack_checks import named, predict, scenario, step_ops

from rooflens.hardware.profiles import IDEAL
from rooflens.model.predict.steps import Step
from rooflens.model.pricing.roofline import price_op

D, F = 4096, 11008  # Llama-2-7B
PREFILL = Step("prefill", 1.0, 2048.0, 2048.0)


def test_sparse_peak_and_compressed_weights_closed_form() -> None:
    sc = scenario("llama-2-7b", "h100-sxm", prompt_len=2048, output_len=2)
    dense = named(step_ops(sc, [], PREFILL), "mlp.up_gate")
    sparse = named(step_ops(sc, ["sparsity-2:4"], PREFILL), "mlp.up_gate")
    # half the bf16 values (1 B per original weight) + 2 bits per kept value (1/8 B)
    assert sparse.weight_bytes == pytest.approx(2 * F * D * (1.0 + 1 / 8))
    # 2:4 runs at 2x the dense peak: half the time of the compute-bound GEMM
    t_dense = price_op(dense, sc.system, IDEAL).compute_s
    t_sparse = price_op(sparse, sc.system, IDEAL).compute_s
    assert t_sparse == pytest.approx(t_dense / sc.gpu.sparsity_2_4_multiplier)
    assert named(step_ops(sc, ["sparsity-2:4"], PREFILL), "lm_head") == named(
        step_ops(sc, [], PREFILL), "lm_head"
    )


def test_memory_saving_closed_form() -> None:
    sc = scenario("llama-2-7b", "a100-sxm-80gb", prompt_len=128, output_len=2)
    from rooflens.model.specs.params import count_params

    pc = count_params(sc.model)
    linear = pc.layers - pc.n_layers * pc.norms_per_layer
    saved = predict(sc).memory.weights_bytes - predict(sc, ["sparsity-2:4"]).memory.weights_bytes
    assert saved == pytest.approx(linear * (2 / 2 - 1 / 8))


def test_no_gain_without_sparse_tensor_cores() -> None:
    # V100: first-generation tensor cores, sparsity_2_4_multiplier = 1
    sc = scenario("llama-2-7b", "v100-sxm-32gb", act_dtype="fp16", prompt_len=512, output_len=16)
    with_, without = predict(sc, ["sparsity-2:4"]), predict(sc)
    assert with_.ttft_s == without.ttft_s and with_.tpot_s == without.tpot_s
    assert with_.memory.weights_bytes == without.memory.weights_bytes
    assert any("no sparse tensor cores" in n for n in with_.notes)


def test_decode_gain_is_the_weight_compression() -> None:
    sc = scenario("llama-2-7b", "h100-sxm", batch=1, prompt_len=128, output_len=64)
    speedup = predict(sc).tpot_s / predict(sc, ["sparsity-2:4"]).tpot_s
    assert 1.5 < speedup < 2 / 1.125  # memory-bound: at most the 2 → 1.125 B per weight ratio


def test_composes_with_weight_only_int4() -> None:
    sc = scenario("llama-2-7b", "a100-sxm-80gb", weight_dtype="int4", prompt_len=128, output_len=2)
    dense = named(step_ops(sc, [], PREFILL), "mlp.down")
    sparse = named(step_ops(sc, ["sparsity-2:4"], PREFILL), "mlp.down")
    # int4: 0.25 B of kept values + 1/8 B metadata per weight, the group scales unchanged
    assert dense.weight_bytes - sparse.weight_bytes == pytest.approx(D * F * (0.25 - 1 / 8))
    assert sparse.vector_flops == pytest.approx(dense.vector_flops / 2)


def test_the_name_with_a_colon_parses() -> None:
    from rooflens.hardware.errors import RooflensError
    from rooflens.model.optimizations import parse_opt

    assert parse_opt("sparsity-2:4").name == "sparsity-2:4"
    assert parse_opt(" paged-kv:block=32 ")["block"] == 32
    with pytest.raises(RooflensError, match="unknown parameter"):
        parse_opt("sparsity-2:4:block=2")
    with pytest.raises(RooflensError, match="unknown optimization"):
        parse_opt("sparsity-2:8")
