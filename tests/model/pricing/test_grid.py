"""A GEMM's grid and its tile padding (model/pricing/grid.py): a tile-starved 16-bit GEMM
splits its K over the idle SMs; quantized families and grouped MoE GEMMs keep one program per
tile, as their tables measure."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import KindEfficiency, Profile
from rooflens.hardware.systems import default_system
from rooflens.model.ops.op import gemm_op
from rooflens.model.pricing.grid import (
    MMA_REF_FLOP_PER_SM_CYCLE,
    SPLIT_K_MIN,
    k_splits,
    padding,
    resident_programs,
    tile_quantization,
)
from rooflens.model.pricing.roofline import price_op, sm_mma_rate

RTX = get_gpu("rtx-pro-6000")  # 188 SMs


def test_a_tall_k_16_bit_gemm_splits_its_k_over_the_idle_sms():
    # Y[8, 32] = X[8, 65536] · W: one 128x128 tile. Split 32 ways (65,536 / 2,048), it runs 32
    # programs in one wave: the grid does 188 · 128² / (32 · 8 · 32) = 376x the needed work,
    # where one program alone on 188 SMs does 188 · 128² / (8 · 32) = 12,032x.
    tall = gemm_op("g", "decode", 1, 8.0, 32.0, 65536.0, "bf16", "bf16")
    assert float(k_splits(tall, np.asarray(1.0), 188)) == 65536 / SPLIT_K_MIN == 32
    assert float(tile_quantization(tall, 188)) == pytest.approx(188 * 128**2 / (32 * 8 * 32))
    # never more splits than idle SMs: 40 tiles on 188 SMs take 4 splits, not 32
    wide = gemm_op("g", "decode", 1, 8.0, 40 * 128.0, 65536.0, "bf16", "bf16")
    assert float(k_splits(wide, np.asarray(40.0), 188)) == 4
    # slices are at least 2,048 deep: K = 4,096 makes two, K = 4,095 one (no split)
    for k, splits in ((4096.0, 2), (4095.0, 1)):
        op = gemm_op("g", "decode", 1, 8.0, 32.0, k, "bf16", "bf16")
        assert float(k_splits(op, np.asarray(1.0), 188)) == splits
    shallow = gemm_op("g", "decode", 1, 8.0, 32.0, 4095.0, "bf16", "bf16")
    assert float(tile_quantization(shallow, 188)) == 188 * 128**2 / (8 * 32)


def test_quantized_gemms_do_not_split():
    for weights, acts in (("fp8", "fp8"), ("int4", "bf16"), ("nvfp4", "nvfp4")):
        op = gemm_op("g", "decode", 1, 8.0, 32.0, 65536.0, weights, acts)
        assert float(tile_quantization(op, 188)) == 188 * 128**2 / (8 * 32), weights


def test_the_split_is_priced_through_the_padding_of_the_compute_roof():
    tall = gemm_op("g", "decode", 1, 8.0, 32.0, 65536.0, "bf16", "bf16")
    eff = KindEfficiency(wave_tail=0.25, overhead_s=2e-6)
    profile = Profile(name="calibrated", kinds={"gemm": eff}, source="test")
    time_s = float(price_op(tall, default_system(RTX), profile).time_s)
    flops_s = 2 * 8 * 32 * 65536 / RTX.peak("bf16")
    read_s = 2 * (8 * 65536 + 32 * 65536 + 8 * 32) / RTX.hbm_bytes_per_s
    # 32 programs on 188 SMs, one wave: its time is one program's 128² tile over k / 32, whose
    # 8 · 32 useful outputs run at the SM's rate and whose other 128² - 256 at the reference
    # rate per cycle (a 16-bit GEMM's padding; the RTX PRO 6000's SM is below it)
    rate = RTX.peak("bf16") / 188 / RTX.boost_clock_hz
    scale = rate / MMA_REF_FLOP_PER_SM_CYCLE
    assert scale < 1
    q, full = 188 * 128**2 / (32 * 8 * 32), 8 * 32 / 128**2
    padded = 1 + 0.25 * (q * (full + (1 - full) * scale) - 1)
    assert time_s == pytest.approx(2e-6 + max(flops_s * padded, read_s), rel=1e-9)


def test_in_tile_padding_of_a_16_bit_gemm_costs_sm_cycles_not_the_sms_tensor_rate():
    # A router Y[1, 128] over k = 2,048: one tile on one SM, 127 of its 128 rows padding. The
    # wave takes that tile's time: its useful row at the SM's tensor rate, its 127 padded rows
    # at the reference rate per SM cycle, so the padding follows the clock, not the tensor width
    # (an RTX 3090 SM does 1/7 of an H100 SM's MMAs per cycle). A Blackwell SM, above the
    # reference, pays its own rate: padding never costs more than a useful row. A quantized
    # kernel's padding stays at its SM's own rate (Q - 1).
    router = gemm_op("moe.router", "decode", 1, 1.0, 128.0, 2048.0, "bf16", "bf16")
    fp8 = gemm_op("g", "decode", 1, 1.0, 128.0, 2048.0, "fp8", "fp8")
    for gpu_id in ("rtx-3090", "h100-sxm", "b300"):
        gpu = get_gpu(gpu_id)
        rate = sm_mma_rate(gpu, gpu.peak("bf16"))
        assert rate == pytest.approx(gpu.peak("bf16") / gpu.sm_count / gpu.boost_clock_hz)
        compute_s = 2 * 128 * 2048 / gpu.peak("bf16")  # the useful work over the whole GPU
        wave_s = compute_s * (1 + float(padding(router, gpu.sm_count, rate)))
        row_s = 2 * 128 * 2048 / (gpu.peak("bf16") / gpu.sm_count)  # one row on one SM
        # above the reference rate (a Blackwell SM) the padding pays the SM's own rate
        padded_rate = max(
            MMA_REF_FLOP_PER_SM_CYCLE * gpu.boost_clock_hz, gpu.peak("bf16") / gpu.sm_count
        )
        padded_rows_s = 2 * 127 * 128 * 2048 / padded_rate
        assert wave_s == pytest.approx(row_s + padded_rows_s), gpu_id
        assert float(padding(fp8, gpu.sm_count, rate)) == pytest.approx(
            float(tile_quantization(fp8, gpu.sm_count)) - 1
        )
    b300 = get_gpu("b300")
    b300_rate = sm_mma_rate(b300, b300.peak("bf16"))
    assert b300_rate > MMA_REF_FLOP_PER_SM_CYCLE  # the clamp above is exercised
    assert float(padding(router, 148, b300_rate)) == pytest.approx(
        float(tile_quantization(router, 148)) - 1
    )


def test_a_16_bit_gemm_never_gets_cheaper_with_more_rows():
    # m · (1 + padding) is the padded compute in units of one row's: a row that opens a new tile
    # must not price the GEMM cheaper (its padding replaces idle SMs, at the cheaper rate only
    # inside the fullest tile); from a slow SM to one above the reference rate.
    m = np.arange(1.0, 600.0)
    for gpu_id in ("rtx-3090", "a10", "l40s", "h100-sxm", "b300", "gb200"):
        gpu = get_gpu(gpu_id)
        for n, k in ((32.0, 2048.0), (200.0, 65536.0), (4096.0, 4096.0)):
            op = gemm_op("g", "decode", 1, m, np.full_like(m, n), np.full_like(m, k), "bf16",
                         "bf16")  # fmt: skip
            pad = np.asarray(padding(op, gpu.sm_count, sm_mma_rate(gpu, gpu.peak("bf16"))))
            work = m * (1 + pad)
            assert (np.diff(work) >= -1e-9 * work[1:]).all(), (gpu_id, n, k)
            assert (pad >= 0).all()


def test_calibrated_prices_a_tall_k_gemm_as_every_engine_measures_it():
    # every engine's bf16 Y[8, 32] over k = 65,536 (aiconfigurator tables, four GPUs): 6.5-13 µs.
    # Unsplit, the held-out RTX PRO 6000 priced it at 76 µs.
    from rooflens.hardware.profiles import get_profile
    from rooflens.validate.aiconfigurator import load_aiconfigurator_gemm

    rows = load_aiconfigurator_gemm()
    rows = rows[(rows.m == 8) & (rows.n == 32) & (rows.k == 65536) & (rows.quant == "bfloat16")]
    assert len(rows) >= 12
    for row in rows.itertuples():
        gpu, engine = get_gpu(row.gpu), row.impl.split("-")[0]
        op = gemm_op("g", "decode", 1, 8.0, 32.0, 65536.0, "bf16", "bf16")
        priced = price_op(op, default_system(gpu), get_profile("calibrated", gpu, engine))
        assert 0.6 < float(priced.time_s) / row.measured_s < 1.4, (row.gpu, row.impl)


def test_a_fused_norm_holds_as_many_programs_per_sm_as_its_thread_slots_allow():
    # kernels/rmsnorm.py's full-width program has 16 warps (512 threads): an SM of 2,048
    # thread slots holds 4, one of 1,536 (compute capability 8.6, 8.9, 12.0) holds 3
    from rooflens.model.ops.op import norm_op

    fused = norm_op("norm", "prefill", 1, 16384.0, 4096.0, "bf16")
    eager = norm_op("norm", "prefill", 1, 16384.0, 4096.0, "bf16", eager=True)
    assert resident_programs(fused, get_gpu("h100-sxm").max_threads_per_sm) == 4.0
    assert resident_programs(fused, get_gpu("rtx-pro-6000").max_threads_per_sm) == 3.0
    assert resident_programs(fused, None) == 1.0  # a GPU that states no thread slots
    # torch's eager norm and a GEMM's tiles keep the wave of one program per SM they were fitted on
    assert resident_programs(eager, 2048) == 1.0
    gemm = gemm_op("g", "prefill", 1, 4096, 4096, 4096, "bf16", "bf16")
    assert resident_programs(gemm, 2048) == 1.0


@pytest.mark.parametrize("hidden, residual", [(4096.0, 1.0), (2048.0, 0.0), (128.0, 0.0)])
def test_a_streaming_norm_speeds_up_with_bandwidth_on_the_same_sms(hidden, residual):
    # The H200 runs the H100's calibrated terms (same SM design) on the same 132 SMs at the same
    # clock, with 4.8 against 3.35 TB/s. A norm over 262,144 rows streams its rows: its time
    # follows the bandwidth (within 5 %), not a per-SM latency cap fitted where HBM bound it.
    # Before the programs resident per SM were counted, the H200 ran it 1.00-1.03x as fast.
    from rooflens.hardware.profiles import get_profile
    from rooflens.model.ops.op import norm_op

    h100, h200 = get_gpu("h100-sxm"), get_gpu("h200")
    op = norm_op("norm", "prefill", 1, 262144.0, hidden, "bf16", residual=residual)
    t = {g.id: float(price_op(op, default_system(g), get_profile("calibrated", g)).time_s)
         for g in (h100, h200)}  # fmt: skip
    bandwidth_ratio = h200.hbm_bytes_per_s / h100.hbm_bytes_per_s
    assert t["h100-sxm"] / t["h200"] == pytest.approx(bandwidth_ratio, rel=0.05)
    # and the calibrated time stays within the norm's copy-rate roof: bytes / (0.9 x HBM)
    ideal = float(price_op(op, default_system(h100), get_profile("ideal", h100)).time_s)
    assert t["h100-sxm"] / ideal < 1.0 / 0.9 * 1.05
