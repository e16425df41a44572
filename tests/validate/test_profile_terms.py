"""The calibrated profile's terms (numbers: hardware/profiles.py; formula:
model/pricing/roofline.py)
against their closed forms, and the ideal profile as the identity: the plain roofline
max(FLOPs / peak, bytes / bandwidth)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import IDEAL, KindEfficiency, Profile, get_profile
from rooflens.hardware.systems import default_system
from rooflens.model.ops.attention import attention_op
from rooflens.model.ops.op import Op, gemm_op
from rooflens.model.pricing.grid import thread_blocks
from rooflens.model.pricing.kinds import kind_terms
from rooflens.model.pricing.roofline import busy_s, price_op

A100 = get_gpu("a100-sxm-80gb")
SYSTEM = default_system(A100)


def _op(kind: str, shape: dict) -> Op:
    """An op of a kind and shape, no work: for the terms that depend on the grid alone."""
    return Op("x", "kernel", kind, 1, 0.0, 0.0, 0.0, 0.0, "bf16", shape=shape)


def test_ideal_prices_the_plain_roofline():
    # [M, N, K] = [300, 5000, 4096] bf16 on A100: closed form, no other term.
    op = gemm_op("g", "kernel", 1, 300.0, 5000.0, 4096.0, "bf16", "bf16")
    flops = 2 * 300 * 5000 * 4096
    nbytes = 2 * (300 * 4096 + 5000 * 4096 + 300 * 5000)
    expected = max(flops / 312e12, nbytes / 2.039e12)
    assert float(price_op(op, SYSTEM, IDEAL).time_s) == pytest.approx(expected, rel=1e-12)


def test_neutral_efficiency_is_the_identity_on_arrays():
    compute = np.array([1e-6, 5e-6, 0.0, 2e-3])
    memory = np.array([3e-6, 1e-6, 0.0, 2e-3])
    busy = busy_s(KindEfficiency(), compute, memory, _op("gemm", {"m": 1.0, "n": 1.0}), 108)
    np.testing.assert_array_equal(busy, np.maximum(compute, memory))


def test_overlap_power_one_is_the_sum_and_large_power_the_max():
    eff_sum = KindEfficiency(overlap_power=1.0)
    assert busy_s(eff_sum, 2e-6, 3e-6, _op("norm", {}), 108) == pytest.approx(5e-6)
    eff_max = KindEfficiency(overlap_power=200.0)
    assert busy_s(eff_max, 2e-6, 3e-6, _op("norm", {}), 108) == pytest.approx(3e-6, rel=1e-2)
    eff_two = KindEfficiency(overlap_power=2.0)
    assert busy_s(eff_two, 3e-6, 4e-6, _op("norm", {}), 108) == pytest.approx(5e-6)  # 3-4-5


def test_wave_latency_counts_waves_of_gemm_tiles():
    # m = 128·27, n = 128·10: 270 tiles on 108 SMs -> 3 waves.
    shape = {"m": 128.0 * 27, "n": 128.0 * 10}
    assert float(thread_blocks(_op("gemm", shape))) == 270
    eff = KindEfficiency(wave_latency_s=1e-6)
    assert busy_s(eff, 0.0, 0.0, _op("gemm", shape), 108) == pytest.approx(3e-6)


def test_flash_decoding_splits_never_add_a_wave():
    # 11 sequences x 1 KV head split 9.82 ways = 108.02 programs on 108 SMs: still one wave of
    # the 11 unsplit programs (the split count is chosen to fill one wave). Unsplit, 110
    # programs do take two.
    eff = KindEfficiency(wave_latency_s=1e-6)
    split = {"thread_blocks": 11 * 9.8203125, "kv_splits": 9.8203125}
    assert busy_s(eff, 0.0, 0.0, _op("attention", split), 108) == pytest.approx(1e-6)
    unsplit = _op("attention", {"thread_blocks": 110.0})
    assert busy_s(eff, 0.0, 0.0, unsplit, 108) == pytest.approx(2e-6)
    # So a calibrated decode step never gets faster with one more sequence across that edge
    # (a 1-head model at 1,257 keys: 11 -> 12 sequences was 57.0 -> 53.3 us before).
    from rooflens.model.predict.api import make_pipeline, make_scenario
    from rooflens.model.predict.steps import Step
    from rooflens.model.pricing.roofline import step_time_s
    from rooflens.model.specs.spec import ModelSpec

    spec = ModelSpec(id="tiny", name="tiny", family="llama", n_layers=1, d_model=32, n_heads=1,
                     n_kv_heads=1, head_dim=32, d_ff=32, gated_mlp=False, vocab_size=1000,
                     attention="mha", max_context=1 << 17)  # fmt: skip
    pipe = make_pipeline(make_scenario(spec, "a100-sxm-80gb", profile="calibrated"))
    times = [float(step_time_s(pipe.price_step(Step("decode", b, 1, 1257)))) for b in (11, 12)]
    assert times[1] >= times[0]


def test_saturation_scales_memory_time_by_occupancy():
    # 16 tiles, 2 blocks per SM to saturate on 108 SMs: bandwidth share 16 / 216.
    shape = {"m": 256.0, "n": 1024.0}
    eff = KindEfficiency(saturation_blocks_per_sm=2.0)
    assert busy_s(eff, 0.0, 1e-6, _op("gemm", shape), 108) == pytest.approx(1e-6 * 216 / 16)
    big = {"m": 8192.0, "n": 8192.0}  # 4096 tiles: saturated, unchanged
    assert busy_s(eff, 0.0, 1e-6, _op("gemm", big), 108) == pytest.approx(1e-6)


def test_attention_grid_splits_decode_until_the_gpu_is_full():
    # Decode, B=1, 8 KV heads, group 4: 8 programs; Flash-Decoding splits to fill the 108 SMs,
    # ceil(108 / 8) = 14, capped at one split per 128 keys: L = 4096 allows 32 -> 112 programs.
    decode = attention_op("decode", 1, 1.0, 1.0, 4096.0, 32, 8, 128, "bf16", "bf16", sm_count=108)
    assert float(thread_blocks(decode)) == 8 * 14
    # L = 512 allows only 4 splits -> 32 programs.
    short = attention_op("decode", 1, 1.0, 1.0, 512.0, 32, 8, 128, "bf16", "bf16", sm_count=108)
    assert float(thread_blocks(short)) == 8 * 4
    # Prefill, T = 1000, group 4: ceil(4000 / 128) = 32 query blocks per KV head, no split.
    prefill = attention_op("p", 1, 2.0, 1000.0, 1000.0, 32, 8, 128, "bf16", "bf16", sm_count=108)
    assert float(thread_blocks(prefill)) == 2 * 8 * 32
    assert thread_blocks(_op("attention", {"batch": 1.0})) is None  # no stated grid: unknown


def test_terms_broadcast_over_grids():
    B = np.array([1.0, 8.0, 64.0])
    L = np.array([1024.0, 4096.0, 131072.0])
    op = attention_op("decode", 1, B, 1.0, L, 32, 8, 128, "bf16", "bf16", sm_count=108)
    profile = get_profile("calibrated", A100)
    grid = price_op(op, SYSTEM, profile).time_s
    for i in range(3):
        one = attention_op("decode", 1, B[i], 1.0, L[i], 32, 8, 128, "bf16", "bf16", sm_count=108)
        assert grid[i] == pytest.approx(float(price_op(one, SYSTEM, profile).time_s), rel=1e-12)


def test_decode_attention_takes_its_own_terms():
    decode = KindEfficiency(memory_fraction=0.5)
    profile = Profile(name="t", kinds={"attention": KindEfficiency(), "attention_decode": decode},
                      source="test")  # fmt: skip
    assert kind_terms(profile, _op("attention", {"new_tokens": 1.0})) is decode
    prefill = _op("attention", {"new_tokens": 512.0})
    assert kind_terms(profile, prefill) is profile.kinds["attention"]
    mixed = _op("attention", {"new_tokens": np.array([1.0, 64.0])})
    assert kind_terms(profile, mixed) is profile.kinds["attention"]
    assert kind_terms(profile, _op("gemm", {"new_tokens": 1.0})) == KindEfficiency()


@settings(max_examples=60, deadline=None)
@given(
    cf=st.floats(0.05, 1.0), mf=st.floats(0.05, 1.0), overhead=st.floats(0, 2e-5),
    power=st.one_of(st.none(), st.floats(1.0, 8.0)), wave=st.floats(0, 1e-5),
    sat=st.floats(0, 4.0), tail=st.floats(0, 1.0), m=st.integers(1, 9000), n=st.integers(1, 70000),
    k=st.integers(1, 70000),
)  # fmt: skip
def test_any_calibrated_profile_is_at_least_the_ideal(
    cf, mf, overhead, power, wave, sat, tail, m, n, k
):
    eff = KindEfficiency(
        compute_fraction=cf,
        memory_fraction=mf,
        overhead_s=overhead,
        overlap_power=power,
        wave_latency_s=wave,
        saturation_blocks_per_sm=sat,
        wave_tail=tail,
    )
    profile = Profile(name="calibrated", kinds={"gemm": eff}, source="test")  # fmt: skip
    op = gemm_op("g", "kernel", 1, float(m), float(n), float(k), "bf16", "bf16")
    ideal = float(price_op(op, SYSTEM, IDEAL).time_s)
    assert float(price_op(op, SYSTEM, profile).time_s) >= ideal * (1 - 1e-12)


@pytest.mark.parametrize("gpu_id", ["a100-sxm-80gb", "a40", "h100-sxm", "l40s", "b200"])
def test_calibrated_profiles_load_and_are_fitted(gpu_id):
    profile = get_profile("calibrated", get_gpu(gpu_id))
    assert {"gemm", "attention", "attention_decode"} <= set(profile.kinds)
    assert profile.provenance["git_commit"]
    # Own file for the measured GPUs, a measured GPU's of the same SM design for its siblings
    # (the B200 the B300's), the derived generic profile for the rest.
    sibling = {"b200": "b300"}.get(gpu_id)
    own = gpu_id in ("a100-sxm-80gb", "a40", "h100-sxm")
    assert profile.gpu_id == (gpu_id if own else sibling)
    assert all(math.isfinite(e.overhead_s) for e in profile.kinds.values())


def test_each_kernel_launch_pays_the_floor():
    # Split-KV decode launches the split kernel and its combine: two floors. At 64 sequences x
    # 8 KV heads the 512 programs fill the 108 SMs unsplit: one kernel, one floor.
    profile = Profile(name="t", kinds={"attention_decode": KindEfficiency(overhead_s=1e-6)},
                      source="test")  # fmt: skip

    def floor(B: float) -> float:
        op = attention_op("decode", 1, B, 1.0, 4096.0, 32, 8, 128, "bf16", "bf16", sm_count=108)
        priced = price_op(op, SYSTEM, profile)
        return float(priced.time_s) - max(float(priced.compute_s), float(priced.memory_s))

    assert floor(1.0) == pytest.approx(2e-6, rel=1e-9)
    assert floor(64.0) == pytest.approx(1e-6, rel=1e-9)


def test_norm_rows_are_its_programs():
    # One program per row: 27 rows on 108 SMs with 0.5 programs per SM to saturate stream
    # their rows at 27 / 54 of the bandwidth (the weight vector moves at full rate); 4096 rows
    # reach all of it.
    from rooflens.model.ops.op import norm_op

    eff = KindEfficiency(saturation_blocks_per_sm=0.5)
    profile = Profile(name="t", kinds={"norm": eff}, source="test")
    for rows, share in ((27.0, 27 / 54), (4096.0, 1.0)):
        op = norm_op("n", "kernel", 1, rows, 4096.0, "bf16")
        expected = (op.act_bytes / share + op.weight_bytes) / A100.hbm_bytes_per_s
        assert float(price_op(op, SYSTEM, profile).time_s) == pytest.approx(expected, rel=1e-12)


def test_wave_tail_charges_the_padding_of_tiles_and_waves():
    # m = 130, n = 128·5 on 108 SMs: 2 x 5 = 10 tiles of 128², one wave, so the grid does
    # 108 · 128² / (130 · 640) = 21.3x the needed work; wave_tail = 0.5 pays half the excess.
    shape = {"m": 130.0, "n": 128.0 * 5}
    Q = 108 * 128**2 / (130 * 640)
    for tail in (1.0, 0.5):
        eff = KindEfficiency(wave_tail=tail)
        expected = 1e-3 * (1 + tail * (Q - 1))
        assert busy_s(eff, 1e-3, 0.0, _op("gemm", shape), 108) == pytest.approx(expected)
    full = {"m": 128.0 * 27, "n": 128.0 * 8}  # 216 whole tiles, two whole waves: no padding
    assert busy_s(KindEfficiency(wave_tail=1.0), 1e-3, 0.0, _op("gemm", full), 108) == 1e-3
