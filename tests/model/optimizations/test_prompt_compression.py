"""LLMLingua-style prompt compression (model/optimizations/prompt_compression.py)."""

from __future__ import annotations

import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations.prompt_compression import PromptCompression
from rooflens.model.predict.api import make_scenario, run
from rooflens.model.predict.predictor import Pipeline
from rooflens.model.predict.steps import Step
from rooflens.model.pricing.roofline import step_time_s


def sc(prompt_len: int, batch: int = 4):
    return make_scenario("llama-2-13b", "a100-sxm-80gb", batch=batch, prompt_len=prompt_len,
                         output_len=64)  # fmt: skip


def test_ratio_one_is_the_identity() -> None:
    assert run(sc(1000), [PromptCompression()]).to_dict() == run(sc(1000)).to_dict()


def test_equals_running_the_shorter_prompt() -> None:
    # Second route: a 2,000-token prompt compressed 4x is a 500-token prompt.
    compressed = run(sc(2000), [PromptCompression(ratio=4)])
    short = run(sc(500))
    assert compressed.ttft_s == pytest.approx(short.ttft_s)
    assert compressed.tpot_s == pytest.approx(short.tpot_s)
    assert compressed.memory.kv_cache_bytes == pytest.approx(short.memory.kv_cache_bytes)
    assert compressed.ttft_s < run(sc(2000)).ttft_s / 4  # attention is superlinear in P


def test_compressor_scores_the_full_prompt() -> None:
    opt = PromptCompression(ratio=4, compressor="llama-2-7b")
    small = make_scenario("llama-2-7b", "a100-sxm-80gb", batch=4, prompt_len=2000, output_len=64)
    scoring = step_time_s(Pipeline(small).price_step(Step("prefill", 4.0, 2000.0, 2000.0, 2000.0)))
    with_cost = run(sc(2000), [opt])
    assert with_cost.ttft_s == pytest.approx(run(sc(500)).ttft_s + float(scoring))


def test_ratio_below_one_is_refused() -> None:
    with pytest.raises(RooflensError, match="ratio"):
        PromptCompression(ratio=0.5)
