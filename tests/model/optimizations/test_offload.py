"""offload: F of the weights cross PCIe every step (FlexGen's cost model): overlapped, a step
takes max(GPU, PCIe); serial, their sum."""

from __future__ import annotations

import numpy as np
import pytest
from stack_checks import assert_same_prediction, predict, scenario

from rooflens.model.predict.api import make_pipeline
from rooflens.model.predict.steps import Step
from rooflens.model.pricing.roofline import step_time_s


def weights_read(sc, step) -> float:  # type: ignore[no-untyped-def]
    ops = make_pipeline(sc, []).step_ops(step)
    return float(sum(np.mean(op.weight_bytes) * op.count for op in ops))


@pytest.mark.parametrize("overlap", [True, False])
def test_tpot_closed_form(overlap: bool) -> None:
    sc = scenario("llama-2-7b", "a100-sxm-80gb", batch=1, prompt_len=128, output_len=2)
    F = 0.25
    pred = predict(sc, [f"offload:fraction={F},overlap={str(overlap).lower()}"])
    step = Step("decode", 1.0, 1.0, 129.0)
    gpu_s = float(step_time_s(make_pipeline(sc, []).price_step(step)))
    host_s = F * weights_read(sc, step) / sc.gpu.pcie_bytes_per_s  # 32 GB/s on A100
    assert pred.tpot_s == pytest.approx(max(gpu_s, host_s) if overlap else gpu_s + host_s)
    assert pred.e2e_s == pytest.approx(pred.ttft_s + pred.tpot_s)


def test_memory_closed_form() -> None:
    sc = scenario("llama-2-7b", "a100-sxm-80gb", prompt_len=128, output_len=2)
    W = predict(sc).memory.weights_bytes
    mem = predict(sc, ["offload:fraction=0.5"]).memory
    assert mem.weights_bytes == pytest.approx(0.5 * W + 2 * 0.5 * W / 32)  # double-buffered layer


def test_overlap_never_slower_and_pcie_dominates_decode() -> None:
    sc = scenario("llama-2-7b", "a100-sxm-80gb", batch=1, prompt_len=256, output_len=32)
    base = predict(sc)
    on = predict(sc, ["offload:fraction=0.1"])
    off = predict(sc, ["offload:fraction=0.1,overlap=false"])
    assert base.tpot_s <= on.tpot_s <= off.tpot_s
    assert on.tpot_s > 2 * base.tpot_s  # 10 % at 32 GB/s outweighs 100 % at 2 TB/s


def test_zero_fraction_is_the_identity() -> None:
    sc = scenario("llama-2-7b", "a100-sxm-80gb", batch=2, prompt_len=256, output_len=16)
    assert_same_prediction(predict(sc, ["offload:fraction=0"]), predict(sc))
