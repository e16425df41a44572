"""`unsplit-decode` (model/optimizations/unsplit_decode.py): without Flash-Decoding a decode
step launches B·K thread blocks, so attention reaches min(1, B·K / SMs) of HBM bandwidth (Dao
et al. 2023): at batch 1, Llama 3 8B's 8 KV heads fill 8 of an H100's 132 SMs and attention is
132/8 = 16.5× slower per byte; from 17 sequences (136 blocks) it is unchanged."""

from __future__ import annotations

import pytest

from rooflens.model.predict.api import make_pipeline, make_scenario
from rooflens.model.predict.steps import Step

L = 4096.0


def _core(batch: int, opts: list[str]):  # type: ignore[no-untyped-def]
    pipe = make_pipeline(
        make_scenario("llama-3-8b", "h100-sxm", batch=batch, profile="ideal"), opts
    )
    priced = pipe.price_step(Step("decode", float(batch), 1.0, L))
    return next(p for p in priced if p.op.name == "attn.core"), pipe.scenario.gpu


def test_batch_one_reaches_blocks_over_sms_of_bandwidth() -> None:
    core, gpu = _core(1, ["unsplit-decode"])
    blocks = 1 * 8  # B · K
    per_byte = float(core.memory_s) * gpu.hbm_bytes_per_s / float(core.op.bytes)
    assert gpu.sm_count == 132
    assert per_byte == pytest.approx(gpu.sm_count / blocks, rel=2e-3)
    split, _ = _core(1, [])
    assert float(split.memory_s) * gpu.hbm_bytes_per_s / float(split.op.bytes) == pytest.approx(1)


def test_a_batch_that_fills_the_sms_is_unchanged() -> None:
    unsplit, _ = _core(17, ["unsplit-decode"])  # 136 blocks ≥ 132 SMs
    split, _ = _core(17, [])
    assert float(unsplit.time_s) == pytest.approx(float(split.time_s), rel=1e-12)


def test_prefill_is_unchanged() -> None:
    sc = make_scenario("llama-3-8b", "h100-sxm")
    base = make_pipeline(sc).predict().ttft_s
    assert make_pipeline(sc, ["unsplit-decode"]).predict().ttft_s == pytest.approx(base)
