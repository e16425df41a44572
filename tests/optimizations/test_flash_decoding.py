"""flash-decoding against its occupancy model (Dao, Haziza, Massa, Sizov 2023): the unsplit
kernel reaches blocks/SMs of bandwidth, N splits multiply the blocks and add a fp32 combine."""

from __future__ import annotations

import math

import numpy as np
import pytest
from stack_checks import assert_same_prediction, named, predict, scenario, step_ops, step_s

from model.pipeline import Step

SMS = 132  # H100 SXM
KV, H, DH = 8, 32, 128  # Llama-3-8B


def test_unsplit_kernel_reaches_blocks_over_sms_of_bandwidth() -> None:
    sc = scenario("llama-3-8b", batch=1, prompt_len=4096, output_len=2)
    core = named(step_ops(sc, [], Step("decode", 1.0, 1.0, 4097.0)), "attn.core")
    assert core.bandwidth_fraction == pytest.approx(1 * KV / SMS)
    full = named(step_ops(sc, [], Step("decode", 17.0, 1.0, 4097.0)), "attn.core")
    assert full.bandwidth_fraction == 1.0  # 17 · 8 = 136 blocks ≥ 132 SMs


def test_auto_split_fills_the_sms_and_pays_the_combine() -> None:
    sc = scenario("llama-3-8b", batch=1, prompt_len=4096, output_len=2)
    step = Step("decode", 1.0, 1.0, 4097.0)
    base = named(step_ops(sc, [], step), "attn.core")
    ops = step_ops(sc, ["flash-decoding"], step)
    split, combine = named(ops, "attn.core"), named(ops, "attn.combine")
    n = math.ceil(SMS / KV)  # 17
    assert split.shape["kv_splits"] == n
    assert split.bandwidth_fraction == 1.0
    assert split.flops == base.flops and split.kv_bytes == base.kv_bytes
    # fp32 partial output and log-sum-exp per (row, query head, split), written then read
    assert combine.act_bytes == pytest.approx(2 * 1 * H * n * (DH + 1) * 4)
    assert combine.flops == pytest.approx(H * n * (2 * DH + 4))


def test_explicit_splits_and_the_kv_length_cap() -> None:
    sc = scenario("llama-3-8b", batch=1, prompt_len=4096, output_len=2)
    two = named(
        step_ops(sc, ["flash-decoding:splits=2"], Step("decode", 1.0, 1.0, 4097.0)), "attn.core"
    )
    assert two.bandwidth_fraction == pytest.approx(2 * KV / SMS)
    # 200 keys are two 128-key blocks: at most 2 splits whatever is asked
    short = named(
        step_ops(sc, ["flash-decoding:splits=64"], Step("decode", 1.0, 1.0, 200.0)), "attn.core"
    )
    assert short.shape["kv_splits"] == 2


def test_gain_grows_with_context_and_vanishes_with_batch() -> None:
    def gain(batch: int, length: float) -> float:
        sc = scenario("llama-3-8b", batch=batch, prompt_len=512, output_len=2)
        step = Step("decode", float(batch), 1.0, length)
        return float(step_s(sc, [], step) / step_s(sc, ["flash-decoding"], step))

    assert gain(1, 8192.0) > gain(1, 1024.0) > 1.0
    assert gain(32, 8192.0) == 1.0  # 256 blocks already fill 132 SMs


def test_identity_when_the_batch_fills_the_gpu() -> None:
    sc = scenario("llama-3-8b", batch=32, prompt_len=512, output_len=16)
    assert_same_prediction(predict(sc, ["flash-decoding"]), predict(sc))


def test_prefill_and_eager_attention_are_left_alone() -> None:
    sc = scenario("llama-3-8b", batch=1, prompt_len=512, output_len=16)
    prefill = Step("prefill", 1.0, 512.0, 512.0)
    assert step_ops(sc, ["flash-decoding"], prefill) == step_ops(sc, [], prefill)
    decode = Step("decode", 1.0, 1.0, 520.0)
    eager = step_ops(sc, ["eager-attention"], decode)
    assert step_ops(sc, ["eager-attention", "flash-decoding"], decode) == eager


def test_vectorised_over_kv_lengths() -> None:
    sc = scenario("llama-3-8b", batch=1, prompt_len=64, output_len=2)
    lens = np.array([100.0, 1000.0, 10000.0])
    grid = step_s(sc, ["flash-decoding"], Step("decode", 1.0, 1.0, lens))
    one_by_one = [float(step_s(sc, ["flash-decoding"], Step("decode", 1.0, 1.0, x))) for x in lens]
    assert np.allclose(grid, one_by_one, rtol=1e-12)
