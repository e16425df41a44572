"""A kernel call's grid on the GPU: its programs (thread blocks) and, for a GEMM, the work its
whole tiles and whole waves really do (model/pricing/roofline.py prices both).

A GEMM Y[m,n] runs one program per 128x128 output tile (the CUTLASS/cuBLAS default class), in
waves of one program per SM. Its tile quantization Q = ⌈tiles · S / SMs⌉ · SMs · 128² / (S·m·n)
is the work the grid does over the work it needs (NVIDIA Deep Learning Performance Guide, "Tile
quantization", "Wave quantization"), where S is the number of K splits.

A tile-starved 16-bit GEMM (fewer tiles than SMs) over a deep K is split along K: cuBLAS gives
the idle SMs slices of K at least SPLIT_K_MIN deep, so S = min(⌊SMs / tiles⌋, ⌊k / 2,048⌋).
Without the split, one tile on one SM prices an 8x32 output over k = 65,536 at 76 µs on an RTX
PRO 6000 where every engine measures 8 µs; the engines' 16-bit GEMMs with n ≤ 64 and k > 8,192
were priced 1.3–4.5x slow in sample. The engines' quantized kernels (CUTLASS FP8, NVFP4) do not
split: the same shapes take 17–400 µs where bf16 takes 6–14 µs, so S = 1 there, and for a
grouped MoE GEMM. Split depths from 512 to 16,384 were tried on the engines' bf16 GEMM tables
(one fit per GPU, four GPUs; mean over GPUs of median / p90 |error|):

    depth     in sample, all    in sample, decode m ≤ 16, n ≤ 256, k 1–8k    held out, all
    none      7.3 / 23.8 %      17.8 / 42.3 %                                11.0 / 33.0 %
    1,024     7.6 / 23.4 %      16.1 / 43.5 %                                11.1 / 31.7 %
    2,048     6.7 / 21.6 %      15.8 / 37.7 %                                10.8 / 34.4 %
    4,096     6.6 / 21.0 %      20.0 / 59.0 %                                10.6 / 34.2 %

2,048 is kept: the narrow decode GEMMs (routers, tensor-parallel slices) fit best with it, the
rest about as well as with 4,096.

Q prices every tile slot of every wave at the SM's tensor rate. The fullest tile of a wave sets
its time, and inside it a 16-bit GEMM's padding (a skinny output's unused rows and columns) is
cheaper than that: cuBLAS runs a skinny output with small tiles and a K loop paced by its loads,
so the padding costs SM cycles per K step that do not follow the width of the SM's tensor
cores. Fitted per GPU with all of Q at the SM's tensor rate, the padding charged for one tile
over k = 2,048 is 1.8-2.3 µs on the A100, H100, B300 and RTX PRO 6000, whose SMs do 2.6-15
TFLOP/s (the fitted `wave_tail` runs 0.08-0.40 to make up for it); at that rate an RTX 3090's
SM (0.9 TFLOP/s) paid 25 µs for a MoE router. So a wave costs its fullest tile: its useful
outputs u = min(m, 128) · min(n, 128) at the SM's rate, its 128² − u padded ones at
MMA_REF_FLOP_PER_SM_CYCLE per cycle of the SM's clock, never dearer than a useful one
(`padding`). Leave-one-GPU-out over the five GPUs' bf16 GEMMs (one fit per fold, median / p90
|error|; in sample after the slash):

    padding priced at                                   held out         in sample
    the SM's tensor rate, all of Q                      9.2 / 29.2 %     6.3 / 20.9 %
    a fixed rate per cycle, every tile's padding        9.1 / 27.1 %     6.4 / 20.8 %
    a fixed rate per cycle, the fullest tile's          8.8 / 27.3 %     6.3 / 21.0 %
    the longer of the tile's useful work and its K loop 9.9 / 29.5 %     6.3 / 21.0 %

The third is kept: every tile's padding (the second) prices a GEMM faster when a row is added
that opens a tile (the new tile's padding replaces idle SMs at the cheaper rate). The quantized
CUTLASS kernels keep their tiles (they do not split K either): their padding stays at the SM's
own rate; at the fixed rate the B300's held-out NVFP4 p90 went 63 → 156 %.
"""

from __future__ import annotations

import numpy as np

from rooflens.model.ops.op import Num, Op

GEMM_TILE_M = 128  # output tile of a tensor-core GEMM (CUTLASS/cuBLAS default 128x128 class)
GEMM_TILE_N = 128
SPLIT_K_MIN = 2048  # the shallowest K slice a split 16-bit GEMM gives an SM (module docstring)
SIXTEEN_BIT = ("bf16", "fp16")
# the rate a 16-bit GEMM's in-tile padding is charged at, FLOP per SM cycle: a Hopper SM's dense
# 16-bit MMA rate (989 TFLOP/s = 132 SMs x 4,096 x 1.83 GHz); module docstring
MMA_REF_FLOP_PER_SM_CYCLE = 4096.0


def thread_blocks(op: Op) -> Num | None:
    """Programs in the grid of the kernel that runs an op; None if unknown. An op may state its
    grid (attention, model/ops/attention.py); a GEMM Y[m,n] has one program per 128x128 tile."""
    shape = op.shape
    if "thread_blocks" in shape:
        return np.asarray(shape["thread_blocks"], float)
    if op.kind == "gemm" and {"m", "n"} <= shape.keys():
        return _tiles(*_output(op))
    return None


def resident_programs(op: Op, max_threads_per_sm: int | None) -> float:
    """Programs of the op's grid an SM runs at once, so that one wave of it is this many per
    SM: its thread slots over the threads of one program, where the op states them
    (`program_threads`: a fused norm, model/ops/op.py) and the GPU its slots; else 1, a wave
    of one program per SM (the GEMM tiles and attention grids their terms were fitted with)."""
    threads = op.shape.get("program_threads")
    if not threads or not max_threads_per_sm:
        return 1.0
    return float(max(1, max_threads_per_sm // int(threads)))


def _output(op: Op) -> tuple[np.ndarray, np.ndarray]:
    """A GEMM's output Y[m, n]."""
    return np.asarray(op.shape["m"], float), np.asarray(op.shape["n"], float)


def _tiles(m: Num, n: Num) -> Num:
    """Its 128x128 output tiles, one program each (unsplit)."""
    return np.ceil(m / GEMM_TILE_M) * np.ceil(n / GEMM_TILE_N)


def plain_16_bit(op: Op) -> bool:
    """A cuBLAS-class 16-bit GEMM: no quantized kernel family, not a grouped MoE GEMM."""
    plain = "family" not in op.shape and "experts_read" not in op.shape
    return plain and op.compute_dtype in SIXTEEN_BIT


def k_splits(op: Op, tiles: Num, sm_count: int) -> Num:
    """K splits of a GEMM's grid: a plain 16-bit GEMM fills idle SMs with slices of K at least
    SPLIT_K_MIN deep; a quantized family or a grouped MoE GEMM does not split (1)."""
    if not plain_16_bit(op) or "k" not in op.shape:
        return np.ones_like(tiles)
    deep = np.maximum(np.floor(np.asarray(op.shape["k"], float) / SPLIT_K_MIN), 1.0)
    return np.clip(np.floor(sm_count / tiles), 1.0, deep)


def tile_quantization(op: Op, sm_count: int) -> Num:
    """Work a GEMM's grid really does over the work it needs: whole 128x128 tiles of S splits,
    in whole waves over the SMs, ⌈tiles · S / SMs⌉ · SMs · 128² / (S · m · n) ≥ 1."""
    m, n = _output(op)
    tiles = _tiles(m, n)
    s = k_splits(op, tiles, sm_count)
    return np.ceil(tiles * s / sm_count) * sm_count * GEMM_TILE_M * GEMM_TILE_N / (s * m * n)


def padding(op: Op, sm_count: int, mma_flop_per_sm_cycle: float) -> Num:
    """Q − 1 with a 16-bit GEMM's waves priced by their fullest tile: its useful outputs at the
    SM's rate, its padding at MMA_REF_FLOP_PER_SM_CYCLE per cycle, never dearer than a useful
    output (module docstring); Q − 1 for any other GEMM. Never below 0 (the fullest tile holds
    at least the mean useful work of a slot), and m · (1 + padding) never falls as m grows."""
    q = tile_quantization(op, sm_count)
    if not plain_16_bit(op):
        return q - 1.0
    m, n = _output(op)
    full = np.minimum(m, GEMM_TILE_M) * np.minimum(n, GEMM_TILE_N) / (GEMM_TILE_M * GEMM_TILE_N)
    scale = min(mma_flop_per_sm_cycle / MMA_REF_FLOP_PER_SM_CYCLE, 1.0)
    return q * (full + (1.0 - full) * scale) - 1.0
