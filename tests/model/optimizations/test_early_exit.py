"""CALM early exit (model/optimizations/early_exit.py)."""

from __future__ import annotations

import numpy as np
import pytest
from stack_checks import assert_grid_prices_like_points

from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations.early_exit import EarlyExit, is_layer_op
from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.steps import Step

SC = make_scenario(
    "llama-2-7b", "a100-sxm-80gb", batch=1, prompt_len=256, output_len=32, profile="ideal"
)


def totals(ops, attr, layer_only=None):
    return sum(
        float(getattr(o, attr)) * o.count
        for o in ops
        if layer_only is None or is_layer_op(o) == layer_only
    )


def test_full_depth_is_the_identity() -> None:
    assert run(SC, [EarlyExit(mean_layers=1.0)]).to_dict() == run(SC).to_dict()


@pytest.mark.parametrize(("B", "F"), [(1.0, 0.5), (4.0, 0.7), (64.0, 0.5)])
def test_layer_work_scales_and_kv_is_still_owed(B: float, F: float) -> None:
    step = Step("decode", B, 1.0, 300.0)
    plain = make_pipeline(SC).step_ops(step)
    early = make_pipeline(SC, [EarlyExit(mean_layers=F)]).step_ops(step)
    fill = next(o for o in early if o.name == "early_exit.kv_fill")
    layers = [o for o in early if o.name != "early_exit.kv_fill"]
    assert totals(layers, "flops", True) == pytest.approx(F * totals(plain, "flops", True))
    # Weights of a layer are read if any of the B sequences runs it (E11's X^N with X = 1 − F).
    assert totals(layers, "weight_bytes", True) == pytest.approx(
        (1 - (1 - F) ** B) * totals(plain, "weight_bytes", True)
    )
    assert totals(layers, "flops", False) == pytest.approx(totals(plain, "flops", False))
    # Skipped layers still get their K/V: 2·Kg·Dh = 8192 columns per row, (1 − F)·B rows.
    assert fill.count == 32
    assert float(fill.flops) == pytest.approx(2 * (1 - F) * B * 4096 * 8192)
    assert totals(early, "kv_bytes") == pytest.approx(
        totals(plain, "kv_bytes") - (1 - F) * totals(plain, "kv_bytes", True)
        + float(fill.kv_bytes) * fill.count
    )  # fmt: skip
    written = B * 8192 * 2 * 32  # K/V rows of the skipped layers, bf16, all 32 layers
    assert float(fill.kv_bytes) * fill.count == pytest.approx((1 - F) * written)


def test_prefill_runs_every_layer() -> None:
    step = Step("prefill", 1.0, 256.0, 256.0)
    plain = make_pipeline(SC).step_ops(step)
    early = make_pipeline(SC, [EarlyExit(mean_layers=0.5)]).step_ops(step)
    assert early == plain


def test_batch_1_decode_gets_faster_roughly_by_depth() -> None:
    base, half = run(SC), run(SC, [EarlyExit(mean_layers=0.5)])
    assert half.ttft_s == base.ttft_s
    assert 1.6 < base.tpot_s / half.tpot_s < 2.0  # lm_head and K/V fill are not skipped


def test_share_must_be_in_range() -> None:
    with pytest.raises(RooflensError, match="mean_layers"):
        EarlyExit(mean_layers=0.0)


def test_grids_price_like_single_points() -> None:
    # The capacity planner prices (B, L) grids in one call: the hook must broadcast.
    pipeline = make_pipeline(SC, [EarlyExit(mean_layers=0.6)])
    B = np.array([[1.0], [8.0], [64.0]])
    L = np.array([[300.0, 900.0]])
    assert_grid_prices_like_points(pipeline, B, L)
