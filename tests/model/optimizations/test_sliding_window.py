"""sliding-window (+ StreamingLLM sinks): attention and KV memory capped at W + S positions."""

from __future__ import annotations

import numpy as np
import pytest
from stack_checks import assert_same_prediction, named, predict, scenario, step_ops, step_s

from rooflens.hardware.errors import RooflensError
from rooflens.model.predict.memory import kv_bytes_per_token
from rooflens.model.predict.steps import Step

H, KV, DH = 32, 8, 128  # Llama-3-8B


def test_decode_step_past_the_window_closed_form() -> None:
    sc = scenario("llama-3-8b", batch=2, prompt_len=512, output_len=2)
    W, S, L = 1000, 4, 5000.0
    core = named(
        step_ops(sc, [f"sliding-window:window={W},sinks={S}"], Step("decode", 2.0, 1.0, L)),
        "attn.core",
    )
    # each query attends W + S keys: QKᵀ and PV, 2·Dh FLOPs each per (query head, key)
    assert core.flops == 2 * 2 * H * (W + S) * 2 * DH
    # reads W + S cached positions per sequence, writes the new K/V row
    assert core.kv_bytes == pytest.approx(2 * (W + S) * 2 * KV * DH * 2 + 2 * 2 * KV * DH * 2)


def test_prefill_attended_pairs_closed_form() -> None:
    sc = scenario("llama-3-8b", batch=1, prompt_len=512, output_len=2)
    P, W = 3000, 1024
    core = named(
        step_ops(sc, [f"sliding-window:window={W}"], Step("prefill", 1.0, P, P)), "attn.core"
    )
    pairs = sum(min(p, W) for p in range(1, P + 1))  # brute force over query positions
    assert core.flops == pytest.approx(2 * H * pairs * 2 * DH)


def test_kv_memory_capped() -> None:
    sc = scenario("llama-3-8b", batch=4, prompt_len=6000, output_len=100)
    mem = predict(sc, ["sliding-window:window=2048,sinks=4"]).memory
    assert mem.kv_cache_bytes == 4 * 2052 * kv_bytes_per_token(sc)
    assert mem.max_batch > predict(sc).memory.max_batch


def test_step_time_stops_growing() -> None:
    sc = scenario("llama-3-8b", batch=8, prompt_len=512, output_len=2)
    opts = ["sliding-window:window=4096"]
    times = step_s(sc, opts, Step("decode", 8.0, 1.0, np.array([8000.0, 16000.0, 32000.0])))
    assert np.ptp(times) == pytest.approx(0.0, abs=1e-15)
    assert step_s(sc, [], Step("decode", 8.0, 1.0, 32000.0)) > times[0]


def test_neutral_settings_are_the_identity() -> None:
    sc = scenario("llama-3-8b", batch=2, prompt_len=600, output_len=40)
    assert_same_prediction(predict(sc, ["sliding-window:window=0"]), predict(sc))
    # a window longer than every sequence changes nothing either
    assert_same_prediction(predict(sc, ["sliding-window:window=4096"]), predict(sc))


@pytest.mark.parametrize("opt", ["sliding-window:window=9000", "sliding-window:window=0,sinks=4"])
def test_bad_windows_are_one_line_errors(opt: str) -> None:
    with pytest.raises(RooflensError, match="sliding-window"):
        predict(scenario("llama-3-8b", output_len=2), [opt])
