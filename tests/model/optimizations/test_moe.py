"""Mixture of experts: the base table's expert accounting (model/ops/table.py), expert parallelism,
and `--opt moe` (capacity, skew, hierarchical all-to-all). Anchors E9 and E12."""

from __future__ import annotations

import numpy as np
import pytest
from stack_checks import assert_grid_prices_like_points

from rooflens.hardware.errors import RooflensError
from rooflens.model.ops.table import build_ops
from rooflens.model.optimizations.moe import MoE, busiest_gpu_load, dropped_tokens, expert_capacity
from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.memory import weights_bytes_per_gpu
from rooflens.model.predict.steps import Step
from rooflens.model.pricing.roofline import price_ops, step_time_s
from rooflens.model.specs.params import count_params
from rooflens.model.specs.presets import get_model

MIXTRAL = get_model("mixtral-8x7b")


def experts_op(sc, B, T=1.0, L=600.0):
    ops = build_ops(sc, "decode", B, T, L)
    return next(op for op in ops if op.name == "moe.experts")


def dense_twin(spec, d_ff):
    return spec.model_copy(
        update={"id": "dense-twin", "n_experts": 0, "experts_per_token": 0,
                "d_ff_expert": 0, "d_ff": d_ff}
    )  # fmt: skip


@pytest.mark.parametrize(
    ("C", "k", "tokens", "E", "expected"),
    [(1.25, 2, 4096, 8, 1280), (1.0, 1, 10, 3, 3), (2.0, 2, 100, 64, 6), (1.0, 2, 7, 8, 2)],
)
def test_expert_capacity_e12(C: float, k: int, tokens: int, E: int, expected: int) -> None:
    # E12 (Lil'Log, MoE): round(C · k · tokens / E).
    assert expert_capacity(C, k, tokens, E) == expected == round(C * k * tokens / E)


def test_expert_capacity_broadcasts() -> None:
    tokens = np.array([8.0, 800.0, 8000.0])
    assert np.array_equal(expert_capacity(1.0, 2, tokens, 8), np.round(tokens * 2 / 8))


def test_dropped_tokens_closed_form() -> None:
    # μ = 2·4096/8 = 1024; capacity 1280; hot expert 2μ = 2048 drops 768; the other seven carry
    # 6/7·1024 = 878 each, under capacity.
    assert dropped_tokens(1.25, 2.0, 2, 4096, 8) == pytest.approx(768)
    assert dropped_tokens(1.25, 1.0, 2, 4096, 8) == 0.0
    assert dropped_tokens(0.0, 3.0, 2, 4096, 8) == 0.0  # dropless
    # Capacity below the mean drops from every expert: 8·(1024 − 512) at C = 0.5.
    assert dropped_tokens(0.5, 1.0, 2, 4096, 8) == pytest.approx(8 * 512)


def test_active_and_total_parameters_e9() -> None:
    pc = count_params(MIXTRAL)
    assert pc.total == pytest.approx(46.7e9, rel=0.01)
    assert pc.active == pytest.approx(12.9e9, rel=0.01)


def test_decode_weight_bytes_follow_distinct_experts() -> None:
    sc = make_scenario(MIXTRAL, "h100-sxm", tp=2)
    per_expert = count_params(MIXTRAL).expert_per_expert * 2.0 / 2  # bf16, TP-split
    one = experts_op(sc, 1.0)
    assert one.weight_bytes == pytest.approx(2 * per_expert)  # batch 1 reads k = 2 experts
    batches = np.array([1.0, 2, 4, 16, 64, 1024])
    read = experts_op(sc, batches).weight_bytes / per_expert
    assert np.all(np.diff(read) > 0)
    # Second route: the expected number of distinct experts hit by B·k draws, computed as
    # E − Σ_e P(expert e untouched) with P = C(E−1, k)/C(E, k) per token = (E − k)/E.
    assert read[1] == pytest.approx(8 - 8 * (6 / 8) ** 2)
    assert read[-1] == pytest.approx(8.0, rel=1e-6)  # large batch reads every expert


def test_one_expert_is_a_dense_mlp() -> None:
    single = MIXTRAL.model_copy(update={"n_experts": 1, "experts_per_token": 1})
    dense = dense_twin(MIXTRAL, MIXTRAL.d_ff_expert)
    for B, T in ((1.0, 1.0), (8.0, 1.0), (2.0, 300.0)):
        moe_op = experts_op(make_scenario(single, "a100-sxm-80gb"), B, T)
        mlp = [o for o in build_ops(make_scenario(dense, "a100-sxm-80gb"), "decode", B, T, 600.0)
               if o.name in ("mlp.up_gate", "mlp.down")]  # fmt: skip
        assert moe_op.flops == pytest.approx(sum(o.flops for o in mlp))
        assert moe_op.weight_bytes == pytest.approx(sum(o.weight_bytes for o in mlp))


def test_neutral_moe_optimization_is_the_identity() -> None:
    sc = make_scenario(MIXTRAL, "h100-sxm", batch=8, tp=4, ep=4, prompt_len=256, output_len=32)
    base, same = run(sc).to_dict(), run(sc, [MoE()]).to_dict()
    base.pop("notes"), same.pop("notes")
    assert same == base


def test_moe_optimization_needs_an_moe_model() -> None:
    with pytest.raises(RooflensError, match="dense"):
        run(make_scenario("llama-2-7b", "h100-sxm"), [MoE(imbalance=2.0)])


@pytest.mark.parametrize("B", [1.0, 16.0, 512.0])
def test_expert_parallel_matches_tensor_parallel_work_per_gpu(B: float) -> None:
    tp = make_scenario(MIXTRAL, "h100-sxm", tp=8)
    ep = make_scenario(MIXTRAL, "h100-sxm", tp=8, ep=8)
    a, b = experts_op(tp, B), experts_op(ep, B)
    assert b.flops == pytest.approx(a.flops)
    assert b.weight_bytes == pytest.approx(a.weight_bytes)  # same expected bytes per GPU
    assert weights_bytes_per_gpu(ep) == pytest.approx(weights_bytes_per_gpu(tp))
    names = [o.name for o in build_ops(ep, "decode", B, 1.0, 600.0)]
    assert {"ep.dispatch", "ep.combine", "tp.all_gather"} <= set(names)


def test_expert_parallel_with_data_parallel_attention() -> None:
    # tp = 1, ep = 8: attention replicated on 8 GPUs, whole experts spread 1 per GPU.
    sc = make_scenario(MIXTRAL, "h100-sxm", tp=1, ep=8)
    pc = count_params(MIXTRAL)
    experts = pc.n_moe_layers * pc.n_experts * pc.expert_per_expert
    expected = weights_bytes_per_gpu(make_scenario(MIXTRAL, "h100-sxm")) - experts * 2.0 * 7 / 8
    assert weights_bytes_per_gpu(sc) == pytest.approx(expected)
    # Each GPU's expert sees the tokens of all 8 replicas: one expert of 8 at batch 1 is read
    # with probability 1 − (6/8)^8.
    op = experts_op(sc, 1.0)
    per_expert = pc.expert_per_expert * 2.0
    assert op.weight_bytes == pytest.approx(per_expert * (1 - 0.75**8))


def test_expert_parallel_rules() -> None:
    with pytest.raises(RooflensError, match="dense"):
        run(make_scenario("llama-2-7b", "h100-sxm", ep=2))
    with pytest.raises(RooflensError, match="multiple of --tp"):
        run(make_scenario(MIXTRAL, "h100-sxm", tp=4, ep=2))
    with pytest.raises(RooflensError, match="divide"):
        run(make_scenario(MIXTRAL, "h100-sxm", tp=1, ep=3))


def test_skew_slows_expert_parallel_not_tensor_parallel() -> None:
    skew = MoE(imbalance=2.0)
    assert busiest_gpu_load(0.0, 2.0, 8, 8) == pytest.approx(2.0)
    for ep, factor in ((1, 1.0), (8, 2.0)):
        sc = make_scenario(MIXTRAL, "h100-sxm", tp=8, ep=ep, batch=64)
        plain = experts_op(sc, 64.0)
        skewed = next(o for o in skew.ops(build_ops(sc, "decode", 64.0, 1.0, 600.0), sc,
                                          Step("decode", 64.0, 1.0, 600.0))
                      if o.name == "moe.experts")  # fmt: skip
        assert skewed.flops == pytest.approx(factor * plain.flops)
        assert skewed.weight_bytes == pytest.approx(plain.weight_bytes)


def test_hierarchical_all_to_all_is_cheaper_for_small_messages_across_nodes() -> None:
    # DeepSeek-V3 (256 experts) over 32 GPUs = 4 nodes of 8, attention data-parallel.
    sc = make_scenario("deepseek-v3", "h100-sxm", tp=1, ep=32, profile="calibrated")
    pipeline = make_pipeline(sc)
    step = Step("decode", 1.0, 1.0, 600.0)
    ops = [o for o in pipeline.step_ops(step) if o.name.startswith("ep.")]
    flat = step_time_s(price_ops(ops, sc.system, pipeline.profile))
    hier_ops = MoE(hierarchical=True).ops(ops, sc, step)
    hier = step_time_s(price_ops(hier_ops, sc.system, pipeline.profile))
    assert all(o.shape["hierarchical"] for o in hier_ops)
    assert hier < 0.9 * flat  # 7 + 3 hops instead of 31, one more fixed latency


def test_mixtral_beats_a_dense_model_of_equal_total_size() -> None:
    # The seed's MoE claim (Lil'Log; Mixtral paper §1): a 46.7 B MoE reading 12.9 B per token
    # has lower latency than a dense 46.7 B model at one query and higher throughput at many.
    dense = dense_twin(MIXTRAL, MIXTRAL.n_experts * MIXTRAL.d_ff_expert)
    assert count_params(dense).total == pytest.approx(count_params(MIXTRAL).total, rel=1e-3)

    def predict(spec, batch):
        # the roofline's claim (bytes read per token); calibrated MoE kernels run below the roof
        return run(make_scenario(spec, "h100-sxm", batch=batch, tp=4, output_len=256,
                                 profile="ideal"))  # fmt: skip

    one_moe, one_dense = predict(MIXTRAL, 1), predict(dense, 1)
    assert one_moe.tpot_s < 0.5 * one_dense.tpot_s
    many_moe, many_dense = predict(MIXTRAL, 1024), predict(dense, 1024)
    assert many_moe.memory.fits and many_dense.memory.fits
    assert many_moe.output_tokens_per_s > 2 * many_dense.output_tokens_per_s


def test_grids_price_like_single_points() -> None:
    sc = make_scenario(MIXTRAL, "h100-sxm", tp=4, ep=4)
    pipeline = make_pipeline(sc, [MoE(imbalance=1.5, capacity_factor=2.0, hierarchical=True)])
    B = np.array([[1.0], [16.0], [256.0]])
    L = np.array([[300.0, 900.0]])
    assert_grid_prices_like_points(pipeline, B, L)
