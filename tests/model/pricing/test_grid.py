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
    # 32 programs on 188 SMs: the wave is 188 / 32 of the programs it runs; each program's
    # tile is 128² / (8 · 32) = 64x its output, that padding at the reference rate per cycle
    rate = RTX.peak("bf16") / 188 / RTX.boost_clock_hz
    waves, in_tile = 188 / 32, 128**2 / (8 * 32)
    padded = 1 + 0.25 * ((waves - 1) + (in_tile - 1) * waves * rate / MMA_REF_FLOP_PER_SM_CYCLE)
    assert time_s == pytest.approx(2e-6 + max(flops_s * padded, read_s), rel=1e-9)


def test_in_tile_padding_of_a_16_bit_gemm_costs_sm_cycles_not_the_sms_tensor_rate():
    # A router Y[1, 128] over k = 2,048: one tile, one program, 127/128 of the tile wasted.
    # Its padding is charged at the reference MMA rate per SM cycle on every GPU, so its time
    # follows the clock, not the tensor width (an RTX 3090 SM does 1/7 of an H100 SM's MMAs
    # per cycle); a quantized kernel's padding stays at its SM's own rate (Q - 1).
    router = gemm_op("moe.router", "decode", 1, 1.0, 128.0, 2048.0, "bf16", "bf16")
    fp8 = gemm_op("g", "decode", 1, 1.0, 128.0, 2048.0, "fp8", "fp8")
    for gpu_id in ("rtx-3090", "h100-sxm", "b300"):
        gpu = get_gpu(gpu_id)
        rate = sm_mma_rate(gpu, "bf16")
        assert rate == pytest.approx(gpu.peak("bf16") / gpu.sm_count / gpu.boost_clock_hz)
        waves = float(gpu.sm_count)  # one program in a wave of sm_count slots
        pad = float(padding(router, gpu.sm_count, rate))
        assert pad == pytest.approx((waves - 1) + 127 * waves * rate / MMA_REF_FLOP_PER_SM_CYCLE)
        # the padded work's time, flops · pad / peak: the tile's 127 unused rows on its one SM at
        # the reference rate per cycle, plus the wave's idle SMs at the GPU's own rate
        pad_s = 2 * 128 * 2048 * pad / gpu.peak("bf16")
        in_tile_s = 2 * 127 * 128 * 2048 / (MMA_REF_FLOP_PER_SM_CYCLE * gpu.boost_clock_hz)
        assert pad_s == pytest.approx(in_tile_s + 2 * 128 * 2048 * (waves - 1) / gpu.peak("bf16"))
        assert float(padding(fp8, gpu.sm_count, rate)) == pytest.approx(
            float(tile_quantization(fp8, gpu.sm_count)) - 1
        )


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
