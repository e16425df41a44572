"""A prefill attention kernel's softmax (model/pricing/softmax.py): SM cycles per scored
query-key pair, against its closed form and the head-dimension effect it exists for."""

from __future__ import annotations

import pytest

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import IDEAL, KindEfficiency, Profile
from rooflens.hardware.spec import CLOCK_FALLBACK_HZ
from rooflens.hardware.systems import default_system
from rooflens.model.ops.attention import attention_op
from rooflens.model.ops.mla import mla_decode_op
from rooflens.model.ops.op import gemm_op
from rooflens.model.pricing.roofline import price_op
from rooflens.model.pricing.softmax import softmax_s

CYCLES = 0.0625  # one exponential per pair at 16 per SM per clock


def _prefill(head_dim: int, heads: int, tokens: int = 4096, batch: int = 2):
    return attention_op("prefill", 1, batch, tokens, tokens, heads, 8, head_dim, "bf16", "bf16")


def _calibrated(**terms: float) -> Profile:
    return Profile(name="calibrated", kinds={"attention": KindEfficiency(**terms)}, source="test")


@pytest.mark.parametrize("gpu_id", ["a100-sxm-80gb", "h100-sxm", "rtx-pro-6000"])
def test_softmax_time_is_pairs_times_cycles_over_the_sms_clock(gpu_id: str) -> None:
    gpu = get_gpu(gpu_id)
    op = _prefill(128, 32)
    # causal: each of the 4,096 queries of each of 2 sequences x 32 heads scores keys 1..p
    pairs = 2 * 32 * 4096 * 4097 / 2
    clock = float(gpu.boost_clock_hz or CLOCK_FALLBACK_HZ)
    expected = pairs * CYCLES / (gpu.sm_count * clock)
    assert softmax_s(op, CYCLES, gpu) == pytest.approx(expected)
    # a GPU spec without a clock (a user's file) takes the stated fallback, not zero
    bare = gpu.model_copy(update={"boost_clock_hz": None})
    assert softmax_s(op, CYCLES, bare) == pytest.approx(
        pairs * CYCLES / (gpu.sm_count * CLOCK_FALLBACK_HZ)
    )


def test_blackwell_ultras_doubled_exponential_rate_halves_the_softmax() -> None:
    # B300 and B200: one SM design, the same SMs and clock; Blackwell Ultra issues 32
    # exponentials per SM per clock against 16 (its preset cites NVIDIA's blog)
    b300, b200 = get_gpu("b300"), get_gpu("b200")
    assert (b300.exp_rate(), b200.exp_rate()) == (32.0, 16.0)
    assert b300.sources["exp_per_sm_cycle"]
    op = _prefill(128, 32)
    per_sm = [softmax_s(op, CYCLES, g) * g.sm_count * g.clock_hz() for g in (b300, b200)]
    assert per_sm[1] == pytest.approx(2 * per_sm[0])


def test_no_term_no_softmax_and_only_attention_pays_it() -> None:
    op = _prefill(128, 32)
    gpu = get_gpu("h100-sxm")
    assert softmax_s(op, 0.0, gpu) == 0.0
    gemm = gemm_op("mlp.up", "prefill", 1, 4096, 4096, 4096, "bf16", "bf16")
    assert softmax_s(gemm, CYCLES, gpu) == 0.0


def test_absorbed_mla_counts_most_of_its_pairs() -> None:
    # absorbed MLA states its latent width (512 + 64) as head_dim and counts q.k over 576 and
    # p.v over 512 dims: pairs come out at (576 + 512) / (2 x 576) = 0.944 of the true count
    op = mla_decode_op("decode", 1, 4, 1, 2048, 16, 512, 64, "bf16", "bf16")
    true_pairs = 4 * 16 * 2048
    gpu = get_gpu("h100-sxm")  # 16 exponentials per clock: cycles are pairs x cycles per pair
    counted = softmax_s(op, 1.0, gpu) * gpu.sm_count * gpu.clock_hz()
    assert counted == pytest.approx(true_pairs * (576 + 512) / (2 * 576))


def test_calibrated_prefill_adds_the_softmax_to_its_compute_roof() -> None:
    gpu = get_gpu("h100-sxm")
    system = default_system(gpu)
    op = _prefill(128, 32)
    plain = price_op(op, system, _calibrated(compute_fraction=0.8))
    with_softmax = price_op(op, system, _calibrated(compute_fraction=0.8, softmax_cycles=CYCLES))
    extra = softmax_s(op, CYCLES, gpu)
    assert plain.compute_s >= plain.memory_s  # 4k tokens: compute-bound
    # max of the roofs (no overlap power): the compute roof plus the softmax
    assert float(with_softmax.time_s) == pytest.approx(float(plain.time_s) + extra)


def test_the_softmax_weighs_twice_as_much_at_half_the_head_dim() -> None:
    # The same FLOPs at head_dim 64 (twice the heads) as at 128: the MMAs cost the same, the
    # softmax twice as much, so the 64-dim call runs at a smaller fraction of the tensor peak,
    # as the engines' tables measure (0.45 against 0.59 of the bf16 peak on the H100).
    gpu = get_gpu("h100-sxm")
    system = default_system(gpu)
    wide, narrow = _prefill(128, 32), _prefill(64, 64)
    assert float(wide.flops) == pytest.approx(float(narrow.flops))
    profile = _calibrated(compute_fraction=0.8, softmax_cycles=CYCLES)
    t_wide, t_narrow = (float(price_op(op, system, profile).time_s) for op in (wide, narrow))
    mma = float(wide.flops) / (gpu.peak("bf16") * 0.8)
    assert t_wide == pytest.approx(mma + softmax_s(wide, CYCLES, gpu))
    assert t_narrow - mma == pytest.approx(2 * (t_wide - mma))
    # the ideal roofline prices FLOPs and bytes alone: both alike
    ideal = [float(price_op(op, system, IDEAL).time_s) for op in (wide, narrow)]
    assert ideal[0] == pytest.approx(ideal[1], rel=1e-3)
