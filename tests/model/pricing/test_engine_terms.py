"""The issue-23 terms of the calibrated formula (model/pricing/roofline.py) against their closed
forms: a launch floor in SM clock cycles, a quantized GEMM's own input-quantization pass, and
the kernel families of attention (model/specs/quant.py attention_family)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import (
    COPY_FRACTION,
    IDEAL,
    INPUT_PASS_MAX_BYTES,
    KindEfficiency,
    Profile,
)
from rooflens.hardware.spec import CLOCK_FALLBACK_HZ
from rooflens.hardware.systems import default_system
from rooflens.model.ops.attention import attention_op
from rooflens.model.ops.op import Op, gemm_op
from rooflens.model.pricing.kinds import kind_key, kind_terms
from rooflens.model.pricing.roofline import per_launch_s, per_wave_s, price_op
from rooflens.model.specs.quant import attention_family


def _profile(**kinds: KindEfficiency) -> Profile:
    return Profile(name="calibrated", kinds=dict(kinds), source="test")


@pytest.mark.parametrize("gpu_id", ["a100-sxm-80gb", "h100-sxm", "rtx-pro-6000"])
def test_a_floor_in_cycles_takes_the_gpus_clock(gpu_id: str) -> None:
    gpu = get_gpu(gpu_id)
    eff = KindEfficiency(overhead_cycles=6000.0, overhead_s=1e-6)
    assert per_launch_s(eff, gpu) == pytest.approx(1e-6 + 6000.0 / float(gpu.boost_clock_hz or 0))
    # a GPU spec without a clock (a user's file) takes the stated fallback, not zero
    bare = gpu.model_copy(update={"boost_clock_hz": None})
    assert per_launch_s(eff, bare) == pytest.approx(1e-6 + 6000.0 / CLOCK_FALLBACK_HZ)


def test_the_same_cycles_cost_less_time_on_a_faster_clock() -> None:
    # 6,000 cycles: 4.3 us on the A100's 1.41 GHz, 2.4 us on the RTX PRO 6000's 2.49 GHz
    eff = KindEfficiency(overhead_cycles=6000.0)
    slow, fast = get_gpu("a100-sxm-80gb"), get_gpu("rtx-pro-6000")
    ratio = per_launch_s(eff, slow) / per_launch_s(eff, fast)
    assert ratio == pytest.approx(float(fast.boost_clock_hz or 0) / float(slow.boost_clock_hz or 0))


@pytest.mark.parametrize("gpu_id", ["a100-sxm-80gb", "b300", "rtx-pro-6000"])
def test_a_wave_latency_in_cycles_takes_the_gpus_clock(gpu_id: str) -> None:
    gpu = get_gpu(gpu_id)
    clock = float(gpu.boost_clock_hz or 0)
    eff = KindEfficiency(wave_latency_s=1e-6, wave_latency_cycles=3000.0)
    assert per_wave_s(eff, gpu) == pytest.approx(1e-6 + 3000.0 / clock)
    bare = gpu.model_copy(update={"boost_clock_hz": None})
    assert per_wave_s(eff, bare) == pytest.approx(1e-6 + 3000.0 / CLOCK_FALLBACK_HZ)
    # priced: a decode call whose latency roof binds (a tiny cache, every other roof near zero)
    # costs its waves of programs at that latency: 2 sequences x 8 KV heads = 16 programs, one
    # wave (no launch floor in these terms)
    system = default_system(gpu)
    op = attention_op("decode", 1, 2, 1, 2, 8, 8, 128, "bf16", "bf16", sm_count=gpu.sm_count)
    cycles = KindEfficiency(wave_latency_cycles=3000.0, overlap_power=None)
    seconds = KindEfficiency(wave_latency_s=3000.0 / clock, overlap_power=None)
    a = price_op(op, system, _profile(attention_decode=cycles)).time_s
    b = price_op(op, system, _profile(attention_decode=seconds)).time_s
    assert float(a) == pytest.approx(float(b), rel=1e-12)
    assert float(a) == pytest.approx(3000.0 / clock, rel=1e-2)


def test_decode_attention_fits_its_wave_latency_in_cycles() -> None:
    from rooflens.validate.fit_terms import terms_for

    for kind in ("attention_decode", "attention_decode:kv_fp8"):
        assert "wave_latency_cycles" in terms_for(kind)
        assert "wave_latency_s" not in terms_for(kind)
    assert "wave_latency_s" in terms_for("attention")


def test_a_quantized_gemms_input_pass_is_its_bytes_at_the_kinds_bandwidth() -> None:
    system = default_system(get_gpu("h100-sxm"))
    m, n, k = 4096, 4096, 8192
    op = gemm_op("x", "prefill", 1, m, n, k, "fp8", "fp8")
    for memory_fraction in (0.4, 0.9):
        terms = {"compute_fraction": 0.8, "memory_fraction": memory_fraction, "overlap_power": 2.0}
        without = price_op(op, system, _profile(**{"gemm:fp8": KindEfficiency(**terms)}))
        with_pass = price_op(
            op, system, _profile(**{"gemm:fp8": KindEfficiency(**terms, input_pass_bytes=5.0)})
        )
        # the pass is a streaming kernel of its own: a device copy's rate, whatever the GEMM's
        expected = m * k * 5.0 / (system.gpu.hbm_bytes_per_s * COPY_FRACTION)
        assert float(with_pass.time_s - without.time_s) == pytest.approx(expected, rel=1e-9)
    # ideal fuses the quantization: no pass, and the bound is physical
    assert price_op(op, system, IDEAL).time_s <= without.time_s
    with pytest.raises(ValidationError):
        KindEfficiency(input_pass_bytes=INPUT_PASS_MAX_BYTES * 1.01)


def test_a_16_bit_gemm_pays_no_input_pass() -> None:
    system = default_system(get_gpu("h100-sxm"))
    op = gemm_op("x", "prefill", 1, 1024, 4096, 4096, "bf16", "bf16")
    plain = KindEfficiency(compute_fraction=0.8, memory_fraction=0.9)
    # the pass is a term of the quantized families; a bf16 GEMM takes the bare kind's terms
    profile = _profile(gemm=plain, **{"gemm:fp8": plain.model_copy(update={"input_pass_bytes": 5})})
    assert kind_key(profile, op) == "gemm"
    assert price_op(op, system, profile).time_s == price_op(op, system, _profile(gemm=plain)).time_s


@pytest.mark.parametrize(
    ("act", "kv", "family"),
    [("bf16", "bf16", None), ("fp16", "fp16", None), ("fp8", "fp8", "fp8"),
     ("bf16", "fp8", "kv_fp8")],
)  # fmt: skip
def test_attention_families(act: str, kv: str, family: str | None) -> None:
    assert attention_family(act, kv) == family


def test_a_decode_calls_family_is_its_caches() -> None:
    # one new token per sequence streams the cache and barely computes: FP8 queries over an FP8
    # cache decode as the fp8 cache does (a family fitted on the few one-token FP8 prefill rows
    # priced such decode calls at 48-139x their ideal time)
    assert attention_family("fp8", "fp8", decode=True) == "kv_fp8"
    assert attention_family("bf16", "fp8", decode=True) == "kv_fp8"
    assert attention_family("bf16", "bf16", decode=True) is None


def test_attention_takes_its_familys_terms_where_the_profile_has_them() -> None:
    def op(T: int, act: str, kv: str) -> Op:
        return attention_op("decode" if T == 1 else "prefill", 1, 8, T, 4096, 32, 8, 128, act,
                            kv, sm_count=132)  # fmt: skip

    a, d, fp8, kv8 = (KindEfficiency(compute_fraction=f) for f in (0.7, 0.3, 0.5, 0.6))
    families = {"attention:fp8": fp8, "attention_decode:kv_fp8": kv8}
    full = _profile(attention=a, attention_decode=d, **families)
    assert kind_terms(full, op(2048, "fp8", "fp8")) == fp8
    assert kind_terms(full, op(2048, "bf16", "bf16")) == a
    assert kind_terms(full, op(1, "bf16", "fp8")) == kv8
    assert kind_terms(full, op(1, "bf16", "bf16")) == d
    assert kind_terms(full, op(1, "fp8", "fp8")) == kv8  # decode: the cache's family
    # without a family's terms the bare kinds price it, decode-shaped first
    bare = _profile(attention=a, attention_decode=d)
    assert kind_terms(bare, op(1, "bf16", "fp8")) == d
    assert kind_terms(bare, op(2048, "fp8", "fp8")) == a
    # a fitted family of decode alone (the fit's candidate profile) prices decode calls
    assert kind_terms(_profile(**{"attention_decode:kv_fp8": kv8}), op(1, "bf16", "fp8")) == kv8


@pytest.mark.parametrize("gpu_id", ["h100-sxm", "b300", "rtx-pro-6000"])
def test_the_sm_side_work_adds_its_flops_at_the_sms_issue_rate(gpu_id: str) -> None:
    # a compute-bound FP8 GEMM, the roofs' max (no overlap power, no floor): the SM-side work
    # adds FLOPs / (SMs x clock x rate) to the compute roof, whatever the tensor peak
    gpu = get_gpu(gpu_id)
    system = default_system(gpu)
    op = gemm_op("x", "prefill", 1, 8192, 8192, 8192, "fp8", "fp8")
    base = {"compute_fraction": 0.9, "overlap_power": None}
    plain = price_op(op, system, _profile(**{"gemm:fp8": KindEfficiency(**base)}))
    series = price_op(
        op, system, _profile(**{"gemm:fp8": KindEfficiency(**base, flops_per_sm_cycle=2e4)})
    )
    flops = 2.0 * 8192**3
    assert float(plain.compute_s) == pytest.approx(flops / (gpu.kernel_peak("fp8") * 0.9))
    added = flops / (gpu.sm_count * float(gpu.boost_clock_hz or 0) * 2e4)
    assert float(series.compute_s - plain.compute_s) == pytest.approx(added, rel=1e-9)
    assert float(series.time_s - plain.time_s) == pytest.approx(added, rel=1e-9)


def test_the_sm_side_work_costs_more_of_a_faster_sms_time() -> None:
    # the same terms take a larger share of the B300's FP8 GEMM (15,356 FP8 FLOP per SM cycle)
    # than of the RTX PRO 6000's (2,066): the achieved fraction of the peak falls with the rate
    op = gemm_op("x", "prefill", 1, 8192, 8192, 8192, "fp8", "fp8")
    terms = KindEfficiency(compute_fraction=0.9, overlap_power=None, flops_per_sm_cycle=2e4)

    def achieved(gpu_id: str) -> float:
        gpu = get_gpu(gpu_id)
        priced = price_op(op, default_system(gpu), _profile(**{"gemm:fp8": terms}))
        return float(op.flops / priced.compute_s / gpu.kernel_peak("fp8"))

    rtx, h100, b300 = achieved("rtx-pro-6000"), achieved("h100-sxm"), achieved("b300")
    assert 0.9 > rtx > h100 > b300
    # closed form: 1 / fraction = 1 / 0.9 + (peak / (SMs x clock)) / 2e4
    gpu = get_gpu("b300")
    rate = gpu.kernel_peak("fp8") / (gpu.sm_count * float(gpu.boost_clock_hz or 0))
    assert b300 == pytest.approx(1.0 / (1.0 / 0.9 + rate / 2e4), rel=1e-9)


def test_only_quantized_gemm_families_fit_the_sm_side_work() -> None:
    from rooflens.validate.fit_terms import SERIES_TERM, terms_for

    for kind in ("gemm:fp8", "gemm:fp8_block", "gemm:nvfp4"):
        assert SERIES_TERM in terms_for(kind)
    for kind in ("gemm", "gemm:int4_wo", "attention", "moe:fp8"):
        assert SERIES_TERM not in terms_for(kind)


@pytest.mark.parametrize("gpu_id", ["h100-sxm", "b300", "rtx-pro-6000"])
def test_a_serialized_amax_costs_its_cycles_per_row_at_the_gpus_clock(gpu_id: str) -> None:
    # vLLM's per-tensor amax: one atomic max per input row, serialized. It adds rows x cycles
    # / clock to the pass whatever k is (the bytes are the pass's other half), and ideal has none
    gpu = get_gpu(gpu_id)
    system = default_system(gpu)
    terms = {"compute_fraction": 0.8, "memory_fraction": 0.9, "input_pass_bytes": 5.0}
    plain = _profile(**{"gemm:fp8": KindEfficiency(**terms)})
    serial = _profile(**{"gemm:fp8": KindEfficiency(**terms, input_pass_row_cycles=13.0)})
    for m, k in ((16, 32), (16384, 32), (16384, 4096)):
        op = gemm_op("x", "prefill", 1, m, 32, k, "fp8", "fp8")
        added = price_op(op, system, serial).time_s - price_op(op, system, plain).time_s
        assert float(added) == pytest.approx(m * 13.0 / float(gpu.boost_clock_hz or 0), rel=1e-9)
        assert price_op(op, system, IDEAL).time_s < price_op(op, system, serial).time_s
    # batched GEMMs (one per head) serialize every head's rows
    op = gemm_op("x", "prefill", 1, 512, 32, 32, "fp8", "fp8", heads=8)
    added = price_op(op, system, serial).time_s - price_op(op, system, plain).time_s
    assert float(added) == pytest.approx(8 * 512 * 13.0 / float(gpu.boost_clock_hz or 0), rel=1e-9)


def test_only_the_fp8_families_fit_cycles_per_row() -> None:
    from rooflens.validate.fit_terms import ROW_TERM, terms_for

    assert ROW_TERM in terms_for("gemm:fp8")
    assert ROW_TERM in terms_for("gemm:fp8_block")
    for kind in ("gemm", "gemm:nvfp4", "gemm:sq", "gemm:int4_wo", "moe:fp8"):
        assert ROW_TERM not in terms_for(kind)


@pytest.mark.parametrize("gpu_id", ["h100-sxm", "b300"])
def test_a_one_row_gemm_pays_its_engines_m1_path_at_the_gpus_clock(gpu_id: str) -> None:
    # S = single_row_cycles / clock where m = 1, and nothing at m = 2, for heads > 1 or under ideal
    gpu = get_gpu(gpu_id)
    system = default_system(gpu)
    terms = {"compute_fraction": 0.8, "memory_fraction": 0.9}
    plain = _profile(**{"gemm:fp8": KindEfficiency(**terms)})
    path = _profile(**{"gemm:fp8": KindEfficiency(**terms, single_row_cycles=26000.0)})
    clock = float(gpu.boost_clock_hz or 0)
    for m, added_s in ((1, 26000.0 / clock), (2, 0.0), (4096, 0.0)):
        op = gemm_op("x", "decode", 1, m, 4096, 4096, "fp8", "fp8")
        added = price_op(op, system, path).time_s - price_op(op, system, plain).time_s
        assert float(added) == pytest.approx(added_s, abs=1e-12)
    batched = gemm_op("x", "decode", 1, 1, 128, 512, "fp8", "fp8", heads=8)
    assert price_op(batched, system, path).time_s == price_op(batched, system, plain).time_s
    op = gemm_op("x", "decode", 1, 1, 4096, 4096, "fp8", "fp8")
    assert price_op(op, system, IDEAL).time_s < price_op(op, system, plain).time_s


def test_a_one_row_path_prices_only_the_m1_points_of_a_grid() -> None:
    import pandas as pd

    from rooflens.model.pricing.kernel_table import predict_frame

    gpu = get_gpu("b300")
    rows = pd.DataFrame({"op": "gemm", "m": [1, 2, 1, 8], "n": 4096, "k": [4096, 4096, 512, 512],
                         "dtype": "fp8", "weight_dtype": "fp8", "quant": "fp8"})  # fmt: skip
    terms = {"compute_fraction": 0.8, "memory_fraction": 0.9}
    plain = _profile(**{"gemm:fp8": KindEfficiency(**terms)})
    path = _profile(**{"gemm:fp8": KindEfficiency(**terms, single_row_cycles=26000.0)})
    added = (predict_frame(rows, gpu, path)["predicted_s"]
             - predict_frame(rows, gpu, plain)["predicted_s"]).to_numpy()  # fmt: skip
    extra = 26000.0 / float(gpu.boost_clock_hz or 0)
    assert added == pytest.approx([extra, 0.0, extra, 0.0], abs=1e-12)
