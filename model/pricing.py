"""Roofline pricing (DESIGN.md step 3): each operator's compute, memory and communication time,
its arithmetic intensity and what bounds it, for a GPU and a profile.

Time of an op = max(compute, memory) + communication + per-call overhead: compute and memory
overlap inside a kernel (roofline lower bound, Williams et al. 2009); a collective does not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from hardware.profiles import Profile
from hardware.spec import SystemSpec
from model.comm import collective_time_s
from model.ops import Num, Op


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
        """'compute', 'memory' or 'comm' (scalar ops; use bound_array for grids)."""
        if self.op.kind == "comm":
            return "comm"
        return (
            "compute"
            if float(np.mean(self.compute_s)) >= float(np.mean(self.memory_s))
            else "memory"
        )


def price_op(op: Op, system: SystemSpec, profile: Profile) -> PricedOp:
    gpu = system.gpu
    eff = profile.kind_for(op.kind, op.shape)  # decode attention may have its own terms
    compute_s = op.flops / (gpu.peak(op.compute_dtype) * eff.compute_fraction)
    compute_s = compute_s + op.vector_flops / (gpu.peak("fp32") * eff.compute_fraction)
    # One occupancy model at a time: a calibrated profile's fitted one (on the op's real grid,
    # hardware/profiles.py) replaces the op's structural min(1, blocks / SMs).
    occupancy = 1.0 if eff.saturation_blocks_per_sm > 0 else op.bandwidth_fraction
    memory_s = op.bytes / (gpu.hbm_bytes_per_s * eff.memory_fraction * occupancy)
    comm_s: Num = 0.0
    if op.kind == "comm":
        comm_s = collective_time_s(op, system, profile)
    # max(compute, memory) under `ideal`; calibrated terms in hardware/profiles.py
    streamed: Num = 1.0
    if "kv_read_bytes" in op.shape:  # only the KV stream is throttled by the grid's occupancy
        with np.errstate(divide="ignore", invalid="ignore"):
            streamed = np.where(op.bytes > 0, op.shape["kv_read_bytes"] / op.bytes, 1.0)
    busy = eff.busy_s(compute_s, memory_s, op.kind, op.shape, gpu.sm_count, streamed) + comm_s
    # A collective's fixed cost is its protocol's base latency (model/comm.py; fitted on NCCL
    # under `calibrated`): a kernel's per-call overhead on top would count it twice.
    # Per grid point: an op emitted for a whole grid (Flash-Decoding's combine where some
    # points split) costs nothing where it does no work, as a scalar call would not emit it.
    works = _does_work(op)
    overhead: Num = 0.0
    if op.kind != "comm" and np.any(works):
        overhead = eff.overhead_s if np.all(works) else np.where(works, eff.overhead_s, 0.0)
    return PricedOp(op, compute_s, memory_s, comm_s, busy + overhead)


def _does_work(op: Op) -> np.ndarray:
    """Elementwise: does the op move or compute anything at each grid point."""
    return (np.asarray(op.flops) > 0) | (np.asarray(op.bytes) > 0) | (np.asarray(op.comm_bytes) > 0)


def price_ops(ops: list[Op], system: SystemSpec, profile: Profile) -> list[PricedOp]:
    return [price_op(op, system, profile) for op in ops]


def step_time_s(priced: list[PricedOp]) -> Num:
    total: Num = 0.0
    for p in priced:
        total = total + p.total_s
    return total


def to_frame(priced: list[PricedOp]) -> pd.DataFrame:
    """One row per op with totals over `count` (scalar workloads), in SI units."""
    rows = []
    for p in priced:
        op = p.op
        rows.append(
            {
                "name": op.name,
                "phase": op.phase,
                "kind": op.kind,
                "count": op.count,
                "flops": float(np.mean(op.flops)) * op.count,
                "bytes": float(np.mean(op.bytes)) * op.count,
                "weight_bytes": float(np.mean(op.weight_bytes)) * op.count,
                "act_bytes": float(np.mean(op.act_bytes)) * op.count,
                "kv_bytes": float(np.mean(op.kv_bytes)) * op.count,
                "comm_bytes": float(np.mean(op.comm_bytes)) * op.count,
                "compute_s": float(np.mean(p.compute_s)) * op.count,
                "memory_s": float(np.mean(p.memory_s)) * op.count,
                "comm_s": float(np.mean(p.comm_s)) * op.count,
                "time_s": float(np.mean(p.total_s)),
                "compute_dtype": op.compute_dtype,
                "bound": p.bound,
            }
        )
    df = pd.DataFrame(rows)
    if not df.empty:
        with np.errstate(divide="ignore", invalid="ignore"):
            df["intensity"] = df["flops"] / df["bytes"].where(df["bytes"] > 0)
    return df
