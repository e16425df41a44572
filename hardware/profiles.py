"""Pricing profiles: how far below the datasheet a GPU really runs each kind of operator.

`ideal` is the datasheet roofline with no overheads, a lower bound on any real kernel.
`calibrated` scales peaks by achieved fractions and adds terms fitted from measurements
(validate/calibrate.py writes `hardware/calibration/<gpu-id>.yaml` with its provenance). A GPU
without its own file uses `generic.yaml`, which validate/ derives from the measured GPUs.

The time of one kernel call under a profile (`KindEfficiency.busy_s` plus the fixed overhead):

    C = FLOPs / (peak · compute_fraction)             compute roof
    M = bytes / (bandwidth · memory_fraction · u)     memory roof, u = min(1, blocks / (SMs · s))
    W = wave_latency_s · ceil(blocks / SMs)           latency roof: each wave of thread blocks
                                                       costs at least one dependent-load chain
                                                       (split KV grids: waves of the unsplit ones)
    busy = (C^p + M^p + W^p)^(1/p)                    p = overlap_power (None: the max)
    time = busy + overhead_s

C and M are the roofline (Williams, Waterman & Patterson, CACM 2009). The p-norm interpolates
between perfect overlap of the roofs (p = ∞: the roofline's max, a lower bound) and none
(p = 1: their sum, the upper bound of the JAX scaling book, "Rooflines"). u is memory-level
parallelism: a thread block keeps a bounded number of bytes in flight, so bandwidth needs about
s blocks per SM (Little's law; Volkov, "Better performance at lower occupancy", GTC 2010). W is
the wave quantization of a grid over the SMs (NVIDIA Deep Learning Performance Guide, "Wave
quantization"); `thread_blocks` gives a kernel's grid from its shape. The ideal profile has
none of these terms (u = 1, W = 0, p = ∞), so it stays a bound. Fused MoE experts (ops with
`experts_read` in their shape, model/moe.py) take the `moe` kind's terms when fitted.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from hardware.errors import RooflensError
from hardware.presets import read_data_file
from hardware.spec import GPUSpec

CALIBRATION_DIR = Path(__file__).parent / "calibration"
PROFILES = ("ideal", "calibrated")
Num = float | npt.NDArray[np.float64]

# Grid geometry of the kernels the profile's terms describe (fixed, not fitted, so they carry
# over to GPUs without measurements):
GEMM_TILE_M = 128  # output tile of a tensor-core GEMM (CUTLASS/cuBLAS default 128x128 class)
GEMM_TILE_N = 128
ATTN_BLOCK_M = 128  # query rows per FlashAttention-2 program (Dao 2023, §3.3), GQA heads packed
ATTN_SPLIT_N = 256  # KV positions per flash-decoding split (Dao et al. 2023, "Flash-Decoding")
ATTN_FILL_PER_SM = 2  # flash-decoding splits the KV until the grid has ~2 programs per SM


class KindEfficiency(BaseModel):
    """Achieved fractions of peak for one operator kind, its fixed cost per call, and the
    small-problem terms (see the module docstring). Defaults are the ideal roofline."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    compute_fraction: float = Field(default=1.0, gt=0, le=1.0)
    memory_fraction: float = Field(default=1.0, gt=0, le=1.0)
    overhead_s: float = Field(default=0.0, ge=0, description="fixed time per kernel call, s")
    overlap_power: float | None = Field(
        default=None, ge=1.0, description="p of the smooth max of the roofs (None: max)"
    )
    wave_latency_s: float = Field(
        default=0.0, ge=0, description="least time per wave of thread blocks over the SMs, s"
    )
    saturation_blocks_per_sm: float = Field(
        default=0.0, ge=0, description="thread blocks per SM that saturate bandwidth (0: off)"
    )

    def busy_s(
        self,
        compute_s: Num,
        memory_s: Num,
        kind: str,
        shape: dict[str, Any],
        sm_count: int,
        streamed_share: Num = 1.0,
    ) -> Num:
        """Busy time of one call from its compute and memory roofs (overhead not included).

        `streamed_share` is the part of the bytes the grid streams in parallel (an attention
        op's KV-cache reads); only it is throttled by occupancy, the rest moves at full rate.
        """
        blocks = None
        if self.wave_latency_s > 0 or self.saturation_blocks_per_sm > 0:
            blocks = thread_blocks(kind, shape, sm_count)
        latency_s: Num = 0.0
        if blocks is not None:
            blocks = np.maximum(blocks, 1.0)
            if self.saturation_blocks_per_sm > 0:
                with np.errstate(over="ignore"):  # a vanishing saturation means "always full"
                    used = np.minimum(1.0, blocks / (sm_count * self.saturation_blocks_per_sm))
                memory_s = memory_s * (streamed_share / used + 1.0 - streamed_share)
            # Flash-Decoding picks its KV split count to fill one wave (FlashAttention-2's
            # num_splits_heuristic maximises wave efficiency), so splitting never adds a wave:
            # count the waves of the unsplit programs (a stated grid of kv_splits per program).
            splits = np.maximum(np.asarray(shape.get("kv_splits", 1.0), dtype=np.float64), 1.0)
            latency_s = self.wave_latency_s * np.ceil(np.maximum(blocks / splits, 1.0) / sm_count)
        top = np.maximum(np.maximum(compute_s, memory_s), latency_s)
        p = self.overlap_power
        if p is None:
            return top
        with np.errstate(divide="ignore", invalid="ignore"):
            total = sum((np.divide(x, top) ** p for x in (compute_s, memory_s, latency_s)), 0.0)
            return np.where(top > 0, top * total ** (1.0 / p), 0.0 * top)


def thread_blocks(kind: str, shape: dict[str, Any], sm_count: int) -> Num | None:
    """Programs in the grid of the kernel that runs an op, from its shape; None if unknown.

    gemm Y[m,n]: one program per 128x128 output tile. attention of T new queries over L
    positions: per sequence and KV head, ceil(T·group/128) query blocks (GQA heads packed into
    the rows, FlashAttention-2 / FlashInfer), times the flash-decoding KV splits that fill
    ~2 programs per SM without making a split shorter than 256 positions.
    """
    if "thread_blocks" in shape:  # the op states its own grid (unsplit or split attention)
        return np.asarray(shape["thread_blocks"], float)
    if kind == "gemm" and {"m", "n"} <= shape.keys():
        m, n = np.asarray(shape["m"], float), np.asarray(shape["n"], float)
        return np.ceil(m / GEMM_TILE_M) * np.ceil(n / GEMM_TILE_N)
    keys = {"batch", "new_tokens", "kv_len", "n_heads", "n_kv_heads"}
    if kind == "attention" and keys <= shape.keys():
        B, T = np.asarray(shape["batch"], float), np.asarray(shape["new_tokens"], float)
        L = np.asarray(shape["kv_len"], float)
        kv_heads = np.asarray(shape["n_kv_heads"], float)
        group = np.asarray(shape["n_heads"], float) / kv_heads
        programs = B * kv_heads * np.ceil(T * group / ATTN_BLOCK_M)
        want = np.maximum(1.0, np.ceil(ATTN_FILL_PER_SM * sm_count / np.maximum(programs, 1.0)))
        return programs * np.minimum(np.ceil(L / ATTN_SPLIT_N), want)
    return None


class Profile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    gpu_id: str | None = Field(default=None, description="GPU it was fitted on (None = any)")
    kinds: dict[str, KindEfficiency] = Field(
        default_factory=dict,
        description="op kind -> efficiency; key 'default' for the rest",
    )
    comm_bandwidth_fraction: float = Field(default=1.0, gt=0, le=1.0)
    comm_latency_scale: float = Field(default=0.0, ge=0, description="x link latency per step")
    source: str = Field(description="how it was obtained: datasheet, or fit data and date")
    provenance: dict[str, Any] = Field(
        default_factory=dict,
        description="fit record: data sets, rows, errors, versions, git commit, date",
    )

    def kind(self, kind: str) -> KindEfficiency:
        return self.kinds.get(kind) or self.kinds.get("default") or KindEfficiency()

    def kind_for(self, kind: str, shape: dict[str, Any]) -> KindEfficiency:
        """The terms pricing uses for one op. Decode-shaped attention (one new token per
        sequence: flash-decoding kernels, CUDA-core bound when compute-bound) takes the
        `attention_decode` terms when the profile has them; prefill, chunked prefill and
        verification (T > 1, or a grid mixing both) take `attention`. A fused MoE layer's
        routed experts (a `gemm` op with `experts_read` in its shape, model/moe.py) take the
        `moe` terms when the profile has them: a grouped GEMM over ragged per-expert batches,
        not one dense cuBLAS call."""
        if kind == "gemm" and "experts_read" in shape and "moe" in self.kinds:
            return self.kinds["moe"]
        if kind == "attention" and "attention_decode" in self.kinds:
            new_tokens = shape.get("new_tokens")
            if new_tokens is not None and bool(np.all(np.asarray(new_tokens) <= 1)):
                return self.kinds["attention_decode"]
        return self.kind(kind)


IDEAL = Profile(
    name="ideal",
    source="datasheet peaks, perfect overlap, no launch overhead: a lower bound",
)


@cache
def _load(path: Path) -> Profile:
    return Profile.model_validate(read_data_file(path))


def calibration_path(gpu_id: str) -> Path:
    """The calibration file a GPU's `calibrated` profile comes from (its own, else generic)."""
    own = CALIBRATION_DIR / f"{gpu_id}.yaml"
    return own if own.is_file() else CALIBRATION_DIR / "generic.yaml"


def get_profile(name: str, gpu: GPUSpec) -> Profile:
    """`ideal`, or `calibrated` for this GPU (its own fit, else the generic derived profile)."""
    if name == "ideal":
        return IDEAL
    if name != "calibrated":
        raise RooflensError(f"unknown profile '{name}': use one of {', '.join(PROFILES)}")
    return _load(calibration_path(gpu.id))
