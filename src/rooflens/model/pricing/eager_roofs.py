"""The SM-side roofs of an eager PyTorch kernel (a harness that times unfused torch ops one by
one): the bandwidth its SMs can issue or keep in flight, whichever is less. The formula and
the measurements behind it are in model/pricing/roofline.py's docstring, which caps an eager
kernel's bandwidth with `eager_roof`."""

from __future__ import annotations

from rooflens.hardware.profiles import KindEfficiency
from rooflens.hardware.spec import GPUSpec


def sm_throughput(gpu: GPUSpec, eff: KindEfficiency) -> float:
    """Bytes/s an eager PyTorch kernel issues: SMs × clock × bytes per SM cycle (0 if unknown)."""
    return gpu.sm_count * (gpu.boost_clock_hz or 0.0) * eff.bytes_per_sm_cycle


def thread_throughput(gpu: GPUSpec, eff: KindEfficiency) -> float:
    """Bytes/s an eager PyTorch kernel keeps in flight (Little's law): resident threads (SMs ×
    threads per SM) × bytes each moves per microsecond (0 if unknown)."""
    threads = gpu.sm_count * (gpu.max_threads_per_sm or 0)
    return threads * eff.bytes_per_thread_us * 1e6


def eager_roof(gpu: GPUSpec, eff: KindEfficiency) -> float:
    """The lesser of an eager kernel's SM-side roofs that the profile and the GPU state, bytes/s
    (inf where none is known)."""
    roofs = [r for r in (sm_throughput(gpu, eff), thread_throughput(gpu, eff)) if r > 0]
    return min(roofs, default=float("inf"))
