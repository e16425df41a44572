"""Which operators bind: decode at batch 1 is memory-bound; a 2,048-token 7B prefill is
compute-bound ("Towards 100x speedup" §1.1; LLM inference book ch. 20.1)."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.steps import Step
from rooflens.model.pricing.roofline import step_time_s

GPUS = ["a100-sxm-80gb", "h100-sxm"]


@pytest.mark.parametrize("gpu", GPUS)
def test_decode_batch_1_is_memory_bound(gpu: str) -> None:
    pred = run(make_scenario("llama-2-7b", gpu, batch=1, prompt_len=512, output_len=64))
    assert pred.decode.bound == "memory"
    frame = pred.ops_frame()
    gemms = frame[(frame["phase"] == "decode") & (frame["kind"] == "gemm")]
    assert set(gemms["bound"]) == {"memory"}


@pytest.mark.parametrize("gpu", GPUS)
def test_prefill_2048_tokens_of_7b_is_compute_bound(gpu: str) -> None:
    pred = run(make_scenario("llama-2-7b", gpu, batch=1, prompt_len=2048, output_len=2))
    assert pred.prefill.bound == "compute"


def test_tpot_averages_the_growing_kv_not_the_final_length() -> None:
    sc = make_scenario("llama-2-7b", "a100-sxm-80gb", batch=32, prompt_len=1000, output_len=300)
    pipeline = make_pipeline(sc)
    pred = pipeline.predict()
    # Second route: price each decode step on its own and average (steps i=1..O-1, L=P+i).
    per_step = [
        float(step_time_s(pipeline.price_step(Step("decode", 32.0, 1.0, 1000.0 + i))))
        for i in range(1, 300)
    ]
    assert pred.tpot_s == pytest.approx(np.mean(per_step), rel=1e-12)
    final = float(step_time_s(pipeline.price_step(Step("decode", 32.0, 1.0, 1299.0))))
    assert pred.tpot_s < final
    assert pred.e2e_s == pytest.approx(pred.ttft_s + 299 * pred.tpot_s)


def test_long_outputs_are_sampled_within_rounding() -> None:
    sc = make_scenario(
        "llama-2-7b", "a100-sxm-80gb", batch=8, prompt_len=100, output_len=3000, profile="ideal"
    )
    pipeline = make_pipeline(sc)
    exact_lens = np.arange(1, 3000, dtype=float) + 100
    exact = float(np.mean(step_time_s(pipeline.price_step(Step("decode", 8.0, 1.0, exact_lens)))))
    assert pipeline.predict().tpot_s == pytest.approx(exact, rel=1e-6)


def test_roofline_time_is_max_of_compute_and_memory() -> None:
    pred = run(make_scenario("llama-3-8b", "h100-sxm", batch=4, prompt_len=700, profile="ideal"))
    for p in pred.prefill.priced + pred.decode.priced:
        expected = np.maximum(p.compute_s, p.memory_s) + p.comm_s
        assert np.allclose(p.time_s, expected)
        assert np.all(p.time_s >= p.compute_s) and np.all(p.time_s >= p.memory_s)
