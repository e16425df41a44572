"""Roofline pricing (DESIGN.md step 3), the one place that turns a kernel call into seconds:
each operator's compute, memory and communication time, its arithmetic intensity and what
bounds it, for a GPU and a profile. The operator table (model/predict/predictor.py), `rooflens
kernels predict` and the validator (model/pricing/kernel_table.py) and the calibration fit
(validate/calibrate.py) all price through `price_op`. The profile's numbers are data
(hardware/profiles.py); their formula is here.

The time of one kernel call under a profile's terms for its kind:

    C = FLOPs / (peak · compute_fraction) · q         compute roof, q = 1 + wave_tail · (Q − 1),
        + FLOPs / (SMs · clock · flops_per_sm_cycle)  16-bit GEMMs: padding in SM cycles (grid.py);
                                                       attention: + its softmax (softmax.py)
    M = bytes / (bandwidth · memory_fraction · u)     memory roof, u = min(1, blocks / (SMs · s));
                                                       a benchmark's call whose replayed copies
                                                       fit in L2 reads them (a GEMM's weights,
                                                       attention's KV) at SMs · clock ·
                                                       l2_bytes_per_sm_cycle where faster
                                                       (l2_resident.py)
    W = w · ceil(blocks / (SMs · r))                  latency roof: each wave of thread blocks
                                                       costs at least one dependent-load chain
                                                       (split KV grids: waves of the unsplit ones;
                                                       r: programs resident per SM, a fused norm's
                                                       thread slots over its program's, else 1)
    w = wave_latency_s + wave_latency_cycles / clock  least time of one wave
    busy = (C^p + M^p + W^p)^(1/p)                    p = overlap_power (None: the max)
    time = busy + P + S + communication + (overhead_s + overhead_cycles / clock) · kernels
    P = input_pass_bytes · m · k / (bandwidth · c)    a quantized GEMM's own pass over its input
        + m · input_pass_row_cycles / clock           (dynamic quantization), c = COPY_FRACTION;
                                                       per row: a per-tensor amax's atomics
    S = single_row_cycles / clock where m = 1         a GEMM engine's m = 1 path (single_row.py)

For an eager PyTorch kernel (`eager` in its shape: a harness that times unfused torch ops one
by one, model/ops/op.py memory_op) the bandwidth is also capped by the SM side, the lesser of:
- issue: SMs × clock × bytes_per_sm_cycle. PyTorch's embedding gather (index_select) spends
  integer index arithmetic on every 2-byte element, so it tracks the SMs' clock (Vidur: 0.30
  TB/s on the A100's 2.0 TB/s HBM, 0.35 TB/s on the A40's 0.70 TB/s: 2.0 and 2.4 bytes per SM
  cycle);
- latency (Little's law, bandwidth = bytes in flight / memory latency): resident threads (SMs ×
  max_threads_per_sm) × bytes_per_thread_us. Streaming kernels with a few loads in flight per
  thread (norms, activations, RoPE) move a fixed number of bytes per resident thread per unit of
  time, whatever the clock: Vidur's norms run at 0.68 TB/s on the A100 (221,184 resident
  threads) and 0.415 TB/s on the A40 (129,024: 48 warps per SM on compute capability 8.6),
  3.1 and 3.2 bytes per thread per microsecond, 0.33 and 0.60 of their HBM.

C and M are the roofline (Williams, Waterman & Patterson, CACM 2009). The p-norm interpolates
between perfect overlap of the roofs (p = ∞: the roofline's max, a lower bound) and none
(p = 1: their sum, the upper bound of the JAX scaling book, "Rooflines"). u is memory-level
parallelism: a thread block keeps a bounded number of bytes in flight, so bandwidth needs about
s blocks per SM (Little's law; Volkov, "Better performance at lower occupancy", GTC 2010);
without a fitted s, the op's structural share min(1, blocks / SMs) applies (model/ops/attention.py).
W is the wave quantization of a grid over the SMs (NVIDIA Deep Learning Performance Guide,
"Tile quantization", "Wave quantization"); for a GEMM, Q = ⌈tiles·S / SMs⌉ · SMs · 128² / (S·m·n)
over S splits of K is the work its grid does (whole tiles, whole waves) over the work it needs; q
charges the share `wave_tail` of it (cuBLAS picks smaller tiles to keep it small, so the fit
decides); a tile-starved 16-bit GEMM splits K, and a wave costs its fullest tile, whose padding
costs SM cycles at a fixed rate, not the SM's tensor rate (model/pricing/grid.py holds the grid,
the split, Q and `padding`). Norms and attention ops state their grids (model/ops/op.py,
model/ops/attention.py). A collective does not overlap compute (model/pricing/comm.py).
C's second term is the work a quantized GEMM's MMAs carry (addresses, barriers, scales, the
epilogue) at the SMs' issue rate, SMs × clock: the more FLOP an SM's MMAs issue per cycle, the
larger its share (validate/fit_terms.py SERIES_TERM has the FP8 tables that say so).
overhead_s (+ overhead_cycles at the GPU's clock) is the floor of one kernel launch (under a
CUDA graph: the graph node's launch and the kernel's ramp-up and tail); an op that launches
more than one kernel states how many (`kernels` in its shape: split-KV attention adds its
combine kernel).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rooflens.hardware.profiles import KindEfficiency, Profile
from rooflens.hardware.spec import GPUSpec, SystemSpec
from rooflens.model.ops.attention import SPLIT_FREE, regrid, unsplit_where
from rooflens.model.ops.op import Num, Op, kernels_per_call
from rooflens.model.pricing.custom_allreduce import collective_time_s
from rooflens.model.pricing.eager_roofs import eager_roof
from rooflens.model.pricing.grid import (
    MMA_REF_FLOP_PER_SM_CYCLE,
    padding,
    resident_programs,
    thread_blocks,
)
from rooflens.model.pricing.input_pass import input_pass_s
from rooflens.model.pricing.kinds import kind_terms
from rooflens.model.pricing.l2_resident import memory_s as l2_memory_s
from rooflens.model.pricing.single_row import single_row_s
from rooflens.model.pricing.softmax import softmax_s


@dataclass(frozen=True)
class PricedOp:
    op: Op
    compute_s: Num  # per instance
    memory_s: Num
    comm_s: Num
    time_s: Num  # per instance

    @property
    def total_s(self) -> Num:
        return self.time_s * self.op.count

    @property
    def intensity(self) -> Num:
        """FLOP per byte of HBM traffic (inf for an op that moves nothing)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.divide(self.op.flops, self.op.bytes)

    @property
    def bound(self) -> str:
        """'compute', 'memory' or 'comm' (scalar ops; use bound_array for grids); 'host' for
        the exposed host time of an eager step (model/optimizations/eager_launch.py)."""
        if self.op.kind in ("comm", "host"):
            return self.op.kind
        return (
            "compute"
            if float(np.mean(self.compute_s)) >= float(np.mean(self.memory_s))
            else "memory"
        )

    def unsplit_where(self, unsplit: PricedOp, take: np.ndarray) -> PricedOp:
        """This price where `take` is False, its one-split regrid's where True, per grid point."""
        times = ("compute_s", "memory_s", "comm_s", "time_s")
        picked = [np.where(take, getattr(unsplit, f), getattr(self, f)) for f in times]
        return PricedOp(unsplit_where(self.op, unsplit.op, take), *picked)


def busy_s(eff: KindEfficiency, compute_s: Num, memory_s: Num, op: Op, sm_count: int,
           streamed_share: Num = 1.0, vector_s: Num = 0.0, wave_s: float | None = None,
           mma_flop_per_sm_cycle: float = MMA_REF_FLOP_PER_SM_CYCLE,
           resident: float = 1.0) -> Num:  # fmt: skip
    """Busy time of one call from its compute and memory roofs (overhead not included).

    `streamed_share` is the part of the bytes the grid streams in parallel (an attention
    op's KV-cache reads); only it is throttled by occupancy, the rest moves at full rate.
    `vector_s` is CUDA-core work: beside a GEMM's tensor cores (dequantization) the busier unit
    bounds it, the tile padding (`wave_tail`) charged to the tensor-core work only. `wave_s`
    is the latency per wave on the GPU at hand (`per_wave_s`; default: `wave_latency_s`);
    `mma_flop_per_sm_cycle` its SM's tensor rate (`sm_mma_rate`), which prices a 16-bit GEMM's
    in-tile padding (model/pricing/grid.py `padding`); `resident` the programs an SM runs at
    once, which one wave holds per SM (grid.py `resident_programs`)."""
    wave_s = eff.wave_latency_s if wave_s is None else wave_s
    blocks = None
    if wave_s > 0 or eff.saturation_blocks_per_sm > 0 or eff.wave_tail > 0:
        blocks = thread_blocks(op)
    latency_s: Num = 0.0
    if blocks is not None:
        blocks = np.maximum(blocks, 1.0)
        if eff.wave_tail > 0 and {"m", "n"} <= op.shape.keys():
            pad = padding(op, sm_count, mma_flop_per_sm_cycle)
            compute_s = compute_s * (1.0 + eff.wave_tail * pad)
        if eff.saturation_blocks_per_sm > 0:
            with np.errstate(over="ignore"):  # a vanishing saturation means "always full"
                used = np.minimum(1.0, blocks / (sm_count * eff.saturation_blocks_per_sm))
            memory_s = memory_s * (streamed_share / used + 1.0 - streamed_share)
        # Flash-Decoding picks its KV split count to fill one wave (FlashAttention-2's
        # num_splits_heuristic maximises wave efficiency), so splitting never adds a wave:
        # count the waves of the unsplit programs (a stated grid of kv_splits per program).
        splits = np.maximum(np.asarray(op.shape.get("kv_splits", 1.0), dtype=np.float64), 1.0)
        latency_s = wave_s * np.ceil(np.maximum(blocks / splits, 1.0) / (sm_count * resident))
    # a GEMM's CUDA-core work (dequantization, a fused epilogue) overlaps its MMAs; an
    # attention op's (split-KV combine) runs after them
    compute_s = np.maximum(compute_s, vector_s) if op.kind == "gemm" else compute_s + vector_s
    top = np.maximum(np.maximum(compute_s, memory_s), latency_s)
    p = eff.overlap_power
    if p is None:
        return top
    with np.errstate(divide="ignore", invalid="ignore"):
        total = sum((np.divide(x, top) ** p for x in (compute_s, memory_s, latency_s)), 0.0)
        return np.where(top > 0, top * total ** (1.0 / p), 0.0 * top)


def price_op(op: Op, system: SystemSpec, profile: Profile) -> PricedOp:
    """One call's price; a decode call whose KV split is the engine's choice, at the cheaper of
    its split and unsplit grids per grid point (a split that costs more than it saves is not
    taken: one more sequence that ends the heuristic's split never makes a step faster)."""
    priced = _price_one(op, system, profile)
    free = op.shape.get(SPLIT_FREE)
    if free is None or not np.any(np.asarray(op.shape["kv_splits"]) > 1):
        return priced
    unsplit = _price_one(regrid(op, 1.0, system.gpu.sm_count), system, profile)
    take = np.asarray(free) & (np.asarray(unsplit.time_s) < np.asarray(priced.time_s))
    return priced.unsplit_where(unsplit, take) if take.any() else priced


def _price_one(op: Op, system: SystemSpec, profile: Profile) -> PricedOp:
    gpu = system.gpu
    eff = kind_terms(profile, op)
    peak = tensor_peak(gpu, op.compute_dtype, profile)
    compute_s = op.flops / (peak * eff.compute_fraction)
    rate = sm_mma_rate(gpu, peak)  # FLOP per SM cycle: the SM-side work's share (docstring)
    if eff.flops_per_sm_cycle > 0:
        compute_s = compute_s + op.flops / peak * rate / eff.flops_per_sm_cycle
    # A GEMM's CUDA-core work (weight dequantization) runs beside the tensor cores (Frantar et
    # al. 2024, "MARLIN" §3: dequantization overlapped with the MMAs), so busy_s takes the busier
    # unit; adding them priced TensorRT-LLM's A100 W4A16/W8A16 GEMMs above their measured time.
    vector_s = op.vector_flops / (gpu.peak("fp32") * eff.compute_fraction)
    vector_s = vector_s + softmax_s(op, eff.softmax_cycles, gpu)  # attention's softmax
    # one occupancy model: a profile's fitted one (on the grid) or the op's min(1, blocks / SMs)
    occupancy = 1.0 if eff.saturation_blocks_per_sm > 0 else op.bandwidth_fraction
    bandwidth = gpu.hbm_bytes_per_s * eff.memory_fraction * occupancy
    if op.shape.get("eager"):
        bandwidth = np.minimum(bandwidth, eager_roof(gpu, eff))
    memory_s = l2_memory_s(op, eff, gpu, bandwidth)  # bytes / bandwidth; a benchmark's L2
    comm_s: Num = 0.0
    if op.kind == "comm":
        comm_s = collective_time_s(op, system, profile)
    # Only the bytes the grid streams (an attention op's KV reads, a norm's rows) are throttled
    # by its occupancy; the rest moves at full rate.
    streamed_bytes = op.shape.get("streamed_bytes", op.shape.get("kv_read_bytes"))
    streamed: Num = 1.0
    if streamed_bytes is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            streamed = np.where(op.bytes > 0, streamed_bytes / op.bytes, 1.0)
    wave_s = per_wave_s(eff, gpu)
    resident = resident_programs(op, gpu.max_threads_per_sm)
    busy = busy_s(eff, compute_s, memory_s, op, gpu.sm_count, streamed, vector_s, wave_s, rate,
                  resident)  # fmt: skip
    busy = busy + comm_s + input_pass_s(op, eff, gpu) + single_row_s(op, eff, gpu)
    # A collective's fixed cost is its protocol's base latency (comm.py): no launch floor on top.
    # Per grid point: an op emitted for a whole grid (Flash-Decoding's combine where some
    # points split) costs nothing where it does no work, as a scalar call would not emit it.
    return PricedOp(op, compute_s, memory_s, comm_s, busy + launch_floor_s(op, profile, gpu))


def launch_floor_s(op: Op, profile: Profile, gpu: GPUSpec) -> Num:
    """The fixed time of one call: the profile's per-launch floor × the kernels the call
    launches (zero under `ideal`, and for a collective, whose base latency is its own)."""
    works = does_work(op)
    if op.kind == "comm" or not np.any(works):
        return 0.0
    floor = per_launch_s(kind_terms(profile, op), gpu) * kernels_per_call(op)
    return floor if np.all(works) else np.where(works, floor, 0.0)


def per_wave_s(eff: KindEfficiency, gpu: GPUSpec) -> float:
    """Least time of one wave of thread blocks: wave_latency_s, plus wave_latency_cycles at the
    GPU's clock (GPUSpec.clock_hz: the boost clock, or a stated fallback)."""
    if not eff.wave_latency_cycles:
        return eff.wave_latency_s
    return eff.wave_latency_s + eff.wave_latency_cycles / gpu.clock_hz()


def tensor_peak(gpu: GPUSpec, dtype: str, profile: Profile) -> float:
    """A dtype's tensor peak: the datasheet's under `ideal`, else what the kernels issue."""
    return gpu.peak(dtype) if profile.datasheet_peaks else gpu.kernel_peak(dtype)


def sm_mma_rate(gpu: GPUSpec, peak: float) -> float:
    """FLOP per cycle of one SM at a tensor peak, at the GPU's clock (GPUSpec.clock_hz)."""
    return peak / gpu.sm_count / gpu.clock_hz()


def per_launch_s(eff: KindEfficiency, gpu: GPUSpec) -> float:
    """One kernel launch's floor: seconds, plus cycles at the GPU's boost clock (the graph
    node's dispatch and the kernel's prologue and epilogue run on the SM clock: fitted per GPU,
    the GEMM floor is 5,700-6,100 cycles on the A100, H100 and RTX PRO 6000, 4.3-2.4 µs).
    A GPU without a stated clock takes spec.py's CLOCK_FALLBACK_HZ."""
    if not eff.overhead_cycles:
        return eff.overhead_s
    return eff.overhead_s + eff.overhead_cycles / gpu.clock_hz()


def does_work(op: Op) -> np.ndarray:
    """Elementwise: does the op move or compute anything at each grid point."""
    return (np.asarray(op.flops) > 0) | (np.asarray(op.bytes) > 0) | (np.asarray(op.comm_bytes) > 0)


def price_ops(ops: list[Op], system: SystemSpec, profile: Profile) -> list[PricedOp]:
    return [price_op(op, system, profile) for op in ops]


def step_time_s(priced: list[PricedOp]) -> Num:
    total: Num = 0.0
    for p in priced:
        total = total + p.total_s
    return total
