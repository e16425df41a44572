"""Host overhead as a term of its own: the CPU time a framework spends issuing a step's kernels.

A GPU only runs what the host has launched. In eager PyTorch every operator costs the host a
roughly fixed time (Python, the dispatcher, the CUDA launch call) whatever the size of its
tensors, so a small-batch decode step whose kernels each take a few µs is bound by the host,
not by the roofline. Captured in a CUDA graph, the whole step is one launch (PyTorch docs,
"CUDA Graphs": the graph replays its kernels without the per-kernel CPU work).

    launches  = Σ over the step's operator rows of count × kernels per call (split-KV adds one)
    host_s    = launches · per_launch_s           eager
              = per_launch_s                      graph-captured (one graph launch)
    exposed_s = max(0, host_s − device_s)         GPU: the host runs ahead of the kernels,
                                                   so only host time beyond the device's is seen
              = host_s                            CPU: the same cores issue and compute

`per_launch_s` is measured where it can be (validate/e2e times a tiny eager model whose compute
is negligible, on the device in question); EAGER_LAUNCH_S is the documented fallback. No torch
here: this module prices plain operator rows, so the CLI and dashboard can use it anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from rooflens.hardware.profiles import Profile
from rooflens.hardware.spec import SystemSpec
from rooflens.model.ops.attention import SPLIT_FREE, regrid
from rooflens.model.ops.op import Num, Op, kernels_per_call
from rooflens.model.pricing.roofline import PricedOp, does_work, price_op

# Host cost per eagerly launched kernel in PyTorch on a current x86 server: 5-10 µs (PyTorch
# "Performance Tuning Guide" and the CUDA-graphs blog post, "Accelerating PyTorch with CUDA
# Graphs", 2021: launch overhead of a few µs per kernel plus Python and dispatcher time; the
# H100 measurements in shared/data/measured/rooflens-h100 see 54-121 µs for a Python-launched
# small Triton call, the upper end once argument checks are included). The middle of the range.
EAGER_LAUNCH_S = 7.5e-6
HOST_OP = "host"


def step_launches(ops: Iterable[Op]) -> Num:
    """Kernel launches of one step at each grid point (arrays over a grid of batches or KV
    lengths, where split-KV attention may split at some points and not at others): per
    operator instance that moves or computes anything there, its kernels (model/ops/op.py
    `kernels_per_call`: split-KV attention adds its combine)."""
    total: Num = 0.0
    for op in ops:
        total = total + op.count * np.where(does_work(op), kernels_per_call(op), 0.0)
    return float(total) if np.ndim(total) == 0 else np.asarray(total, dtype=np.float64)


def launches(ops: Iterable[Op]) -> int:
    """Kernel launches of one step (the most over a grid): `step_launches` as a count."""
    return int(np.max(step_launches(ops)))


def host_time_s(
    ops: Iterable[Op], per_launch_s: float = EAGER_LAUNCH_S, graphed: bool = False
) -> float:
    """Host time to issue one step: every launch in eager mode, one graph launch when captured."""
    if per_launch_s < 0:
        raise ValueError(f"per_launch_s must be ≥ 0, got {per_launch_s}")
    return per_launch_s if graphed else launches(ops) * per_launch_s


def exposed_host_s(host_s: Num, device_s: Num, overlapped: bool) -> Num:
    """Host time the step's latency shows: beyond the device's busy time when the host runs
    ahead of an accelerator (`overlapped`), all of it when the same CPU issues and computes.
    Array-safe (grids of steps); floats in, a float out."""
    if not overlapped:
        return host_s
    out = np.maximum(0.0, np.subtract(host_s, device_s))
    return float(out) if np.ndim(out) == 0 else out


def unsplit_if_host_bound(
    priced: list[PricedOp], device_s: Num, per_launch_s: float, system: SystemSpec,
    profile: Profile, overlapped: bool,
) -> tuple[list[PricedOp], Num]:  # fmt: skip
    """A step's table with its split decode attention run unsplit wherever that makes the
    eager step shorter, and the step's device seconds then. Pricing already takes the cheaper
    grid on the GPU (roofline.py price_op); eagerly each split call also costs the host its
    combine launch, which shows where the host bounds the step. So the step is device +
    exposed host time with the attention split as priced or unsplit (one launch fewer a split
    call), whichever is less, per grid point, and never where the user or a transform pinned
    the split: one more sequence that ends the heuristic's split never makes a step faster."""
    split = [i for i, p in enumerate(priced) if np.any(
        np.asarray(p.op.shape.get(SPLIT_FREE, False))
        & (np.asarray(p.op.shape.get("kernels", 1.0)) > 1))]  # fmt: skip
    if not split:
        return priced, device_s
    alt = {i: price_op(regrid(priced[i].op, 1.0, system.gpu.sm_count), system, profile)
           for i in split}  # fmt: skip
    extra_s = sum((priced[i].op.count * (alt[i].time_s - priced[i].time_s) for i in split), 0.0)
    drop = {i: kernels_per_call(priced[i].op) - kernels_per_call(alt[i].op) for i in split}
    fewer = sum((priced[i].op.count * drop[i] for i in split), 0.0)
    launches = step_launches(p.op for p in priced)
    as_is = device_s + exposed_host_s(launches * per_launch_s, device_s, overlapped)
    unsplit_s = device_s + extra_s
    unsplit = unsplit_s + exposed_host_s((launches - fewer) * per_launch_s, unsplit_s, overlapped)
    take = np.asarray(unsplit < as_is)
    if not take.any():
        return priced, device_s
    out = list(priced)
    for i in split:
        here = take & np.asarray(priced[i].op.shape[SPLIT_FREE], dtype=bool)
        out[i] = priced[i].unsplit_where(alt[i], here)
    return out, np.where(take, unsplit_s, device_s)
