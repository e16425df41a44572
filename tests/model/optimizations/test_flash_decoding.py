"""Flash-Decoding against its occupancy model (Dao, Haziza, Massa, Sizov 2023): the default
table splits decode attention over the KV length to fill the SMs (as vLLM, SGLang and
TensorRT-LLM do) and pays a fp32 combine; `unsplit-decode` switches the split off, so the KV
stream reaches only blocks/SMs of bandwidth; `flash-decoding:splits=N` pins N."""

from __future__ import annotations

import math

import numpy as np
import pytest
from stack_checks import assert_same_prediction, named, predict, scenario, step_ops, step_s

from rooflens.model.predict.steps import Step

SMS = 132  # H100 SXM
KV, H, DH = 8, 32, 128  # Llama-3-8B
BF16 = 2


def kv_stream_bytes(batch: float, length: float) -> float:
    return batch * length * 2 * KV * DH * BF16


def test_default_split_fills_the_sms_and_pays_the_combine() -> None:
    sc = scenario("llama-3-8b", batch=1, prompt_len=4096, output_len=2)
    step = Step("decode", 1.0, 1.0, 4097.0)
    core = named(step_ops(sc, [], step), "attn.core")
    unsplit = named(step_ops(sc, ["unsplit-decode"], step), "attn.core")
    n = math.ceil(SMS / KV)  # 17 splits: 136 blocks ≥ 132 SMs
    assert core.shape["kv_splits"] == n
    assert core.bandwidth_fraction == 1.0
    # The combine kernel is folded into the op (measured decode latencies include it): fp32
    # partial output and log-sum-exp per (row, query head, split), written then read.
    assert core.act_bytes - unsplit.act_bytes == pytest.approx(2 * 1 * H * n * (DH + 1) * 4)
    assert core.vector_flops - unsplit.vector_flops == pytest.approx(H * n * (2 * DH + 4))
    assert core.flops == unsplit.flops and core.kv_bytes == unsplit.kv_bytes


def test_unsplit_kernel_streams_the_kv_at_blocks_over_sms_of_bandwidth() -> None:
    sc = scenario("llama-3-8b", batch=1, prompt_len=4096, output_len=2)
    step = Step("decode", 1.0, 1.0, 4097.0)
    split = named(step_ops(sc, [], step), "attn.core")
    ops = step_ops(sc, ["unsplit-decode"], step)
    core = named(ops, "attn.core")
    assert core.shape["combine_act_bytes"] == 0.0 and core.shape["combine_vector_flops"] == 0.0
    assert core.flops == split.flops and core.kv_bytes == split.kv_bytes
    kv = kv_stream_bytes(1, 4097)
    # time ∝ bytes / share: the KV stream at 8/132 of bandwidth, Q, O and new K/V rows at full
    assert core.bytes / core.bandwidth_fraction == pytest.approx(kv * SMS / KV + core.bytes - kv)
    full = named(step_ops(sc, ["unsplit-decode"], Step("decode", 17.0, 1.0, 4097.0)), "attn.core")
    assert full.bandwidth_fraction == 1.0  # 17 · 8 = 136 blocks ≥ 132 SMs


def test_explicit_splits_and_the_kv_length_cap() -> None:
    sc = scenario("llama-3-8b", batch=1, prompt_len=4096, output_len=2)
    two = named(
        step_ops(sc, ["flash-decoding:splits=2"], Step("decode", 1.0, 1.0, 4097.0)), "attn.core"
    )
    kv = kv_stream_bytes(1, 4097)
    assert two.bytes / two.bandwidth_fraction == pytest.approx(kv * SMS / (2 * KV) + two.bytes - kv)
    # 200 keys: splits average at least 128 keys, whatever is asked
    short = named(
        step_ops(sc, ["flash-decoding:splits=64"], Step("decode", 1.0, 1.0, 200.0)), "attn.core"
    )
    assert short.shape["kv_splits"] == pytest.approx(200 / 128)


def test_gain_grows_with_context_and_vanishes_with_batch() -> None:
    def gain(batch: int, length: float) -> float:
        sc = scenario("llama-3-8b", batch=batch, prompt_len=512, output_len=2, profile="ideal")
        step = Step("decode", float(batch), 1.0, length)
        return float(step_s(sc, ["unsplit-decode"], step) / step_s(sc, [], step))

    assert gain(1, 8192.0) > gain(1, 1024.0) > 1.0
    assert gain(32, 8192.0) == 1.0  # 256 blocks already fill 132 SMs: nothing splits


def test_identities() -> None:
    sc = scenario("llama-3-8b", batch=1, prompt_len=2048, output_len=16)
    assert_same_prediction(predict(sc, ["flash-decoding"]), predict(sc))  # auto = the default
    full = scenario("llama-3-8b", batch=32, prompt_len=512, output_len=16)
    assert_same_prediction(predict(full, ["unsplit-decode"]), predict(full))


def test_prefill_and_eager_attention_are_left_alone() -> None:
    sc = scenario("llama-3-8b", batch=1, prompt_len=512, output_len=16)
    prefill = Step("prefill", 1.0, 512.0, 512.0)
    for opt in ("flash-decoding:splits=4", "unsplit-decode"):
        assert step_ops(sc, [opt], prefill) == step_ops(sc, [], prefill)
    decode = Step("decode", 1.0, 1.0, 520.0)
    eager = step_ops(sc, ["eager-attention"], decode)
    assert step_ops(sc, ["eager-attention", "flash-decoding:splits=4"], decode) == eager
    assert step_ops(sc, ["eager-attention", "unsplit-decode"], decode) == eager


@pytest.mark.parametrize("opts", [[], ["unsplit-decode"], ["flash-decoding:splits=4"]])
def test_vectorised_over_kv_lengths(opts: list[str]) -> None:
    sc = scenario("llama-3-8b", batch=1, prompt_len=64, output_len=2)
    lens = np.array([100.0, 1000.0, 10000.0])
    grid = step_s(sc, opts, Step("decode", 1.0, 1.0, lens))
    one_by_one = [float(step_s(sc, opts, Step("decode", 1.0, 1.0, x))) for x in lens]
    assert np.allclose(grid, one_by_one, rtol=1e-12)
