"""activation-sparsity: a weight column is skipped only when its activation is zero for every
token of the batch, chance X^N ("Transformer inference tricks", anchor E11)."""

from __future__ import annotations

import pytest
from stack_checks import assert_same_prediction, named, predict, scenario, step_ops

from rooflens.model.optimizations.activation_sparsity import skipped_fraction
from rooflens.model.predict.steps import Step


def test_skip_chance_closed_form() -> None:
    assert skipped_fraction(0.9, 1) == pytest.approx(0.9)
    assert skipped_fraction(0.9, 64) == pytest.approx(0.9**64)
    assert skipped_fraction(0.5, 10) == pytest.approx(2**-10)


@pytest.mark.parametrize("batch", [1, 4, 16])
def test_down_projection_bytes_and_flops_scale_by_one_minus_x_to_the_n(batch: int) -> None:
    sc = scenario("opt-13b", "a100-sxm-80gb", batch=batch, prompt_len=128, output_len=2)
    step = Step("decode", float(batch), 1.0, 130.0)
    dense = named(step_ops(sc, [], step), "mlp.down")
    sparse = named(step_ops(sc, ["activation-sparsity:sparsity=0.9"], step), "mlp.down")
    keep = 1 - 0.9**batch
    assert sparse.weight_bytes == pytest.approx(dense.weight_bytes * keep)
    assert sparse.flops == pytest.approx(dense.flops * keep)
    assert named(step_ops(sc, ["activation-sparsity"], step), "mlp.up_gate") == named(
        step_ops(sc, [], step), "mlp.up_gate"
    )


def test_gain_vanishes_with_batch() -> None:
    def gain(batch: int) -> float:
        sc = scenario("opt-13b", "a100-sxm-80gb", batch=batch, prompt_len=128, output_len=32)
        return predict(sc).tpot_s / predict(sc, ["activation-sparsity:sparsity=0.9"]).tpot_s - 1

    assert gain(1) > 0.25  # 90 % of the down projection (a third of the weights) skipped
    assert gain(64) < 0.01  # 0.9^64 ≈ 0.1 %: the invariant
    assert gain(1) > gain(4) > gain(16) > gain(64) >= 0


def test_density_is_the_complement() -> None:
    sc = scenario("opt-13b", "a100-sxm-80gb", batch=2, prompt_len=128, output_len=16)
    a = predict(sc, ["activation-sparsity:density=0.1"])
    b = predict(sc, ["activation-sparsity:sparsity=0.9"])
    assert a.tpot_s == pytest.approx(b.tpot_s)


def test_zero_sparsity_is_the_identity() -> None:
    sc = scenario("opt-13b", "a100-sxm-80gb", batch=2, prompt_len=128, output_len=16)
    assert_same_prediction(predict(sc, ["activation-sparsity:sparsity=0"]), predict(sc))


def test_prefill_gains_nothing() -> None:
    sc = scenario("opt-13b", "a100-sxm-80gb", batch=1, prompt_len=512, output_len=2)
    assert predict(sc, ["activation-sparsity"]).ttft_s == pytest.approx(predict(sc).ttft_s)
