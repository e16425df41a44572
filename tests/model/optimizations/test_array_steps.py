"""Every optimization of issue 3 is numpy-broadcast safe: a step priced over an array of batch
sizes or KV lengths equals the same steps priced one by one (DESIGN.md step 4)."""

from __future__ import annotations

import numpy as np
import pytest
from stack_checks import scenario, step_s

from rooflens.model.predict.steps import Step

OPTS = [
    "no-kv-cache",
    "gqa:kv_heads=2",
    "mqa",
    "quant:scheme=awq",
    "quant:scheme=llm.int8",
    "quant:scheme=fp8",
    "eager-attention",
    "flash-decoding",
    "paged-kv:samples=2",
    "contiguous-kv",
    "sliding-window:window=700,sinks=4",
    "sparsity-2:4",
    "activation-sparsity",
    "offload:fraction=0.2",
    "fusion",
]


@pytest.mark.parametrize("opt", OPTS)
def test_array_kv_lengths_and_batches_match_scalar_steps(opt: str) -> None:
    sc = scenario("llama-3-8b", "h100-sxm", batch=4, prompt_len=64, output_len=2)
    lens = np.array([65.0, 900.0, 3000.0])
    grid = step_s(sc, [opt], Step("decode", 4.0, 1.0, lens))
    single = [float(step_s(sc, [opt], Step("decode", 4.0, 1.0, x))) for x in lens]
    assert np.allclose(grid, single, rtol=1e-12)
    batches = np.array([1.0, 7.0, 64.0])
    grid = step_s(sc, [opt], Step("prefill", batches, 64.0, 64.0))
    single = [float(step_s(sc, [opt], Step("prefill", b, 64.0, 64.0))) for b in batches]
    assert np.allclose(grid, single, rtol=1e-12)
