"""This machine's CPU as a spec (`rooflens calibrate cpu`): the measured-vs-predicted loop that
runs anywhere, CI included.

The CPU's "datasheet" is measured: memory bandwidth as the best of repeated STREAM-style copies
of a buffer far larger than the last-level cache (bytes read + bytes written over time;
McCalpin, STREAM, 1995), and the fp32 matmul peak as the best of repeated square `torch.mm`
calls (2·n³ FLOPs each). Both use `threads` threads (default 1: on a shared machine one thread
is what a run can count on). The spec is a `GPUSpec` with vendor "cpu" saved as YAML under
`validate/results/cpu/`, so every predictor that takes a GPU spec file takes it.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import yaml

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import get_gpu
from rooflens.hardware.spec import GPUSpec
from rooflens.io.files import atomic_write_text
from rooflens.validate.store import RESULTS_DIR, _cpu_name

SPEC_NAME = "spec.yaml"


def _cache_bytes(level: str = "3") -> float:
    """Size of a CPU cache level from sysfs (0 when it cannot be read)."""
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in sorted(base.glob("index*")) if base.is_dir() else []:
        try:
            if (index / "level").read_text().strip() == level:
                text = (index / "size").read_text().strip().upper()
                scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1], 1)
                return float(text.rstrip("KMG")) * scale
        except (OSError, ValueError):
            continue
    return 0.0


def _memory_bytes() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return float(line.split()[1]) * 1024
    except OSError:
        pass
    return 8e9


def _best_s(fn, repeats: int, clock=time.perf_counter) -> float:  # type: ignore[no-untyped-def]
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def measure_bandwidth(buffer_bytes: float, repeats: int = 10, clock=time.perf_counter) -> float:  # type: ignore[no-untyped-def]
    """Bytes/s of the best copy of a buffer (read once, written once)."""
    import torch

    n = int(buffer_bytes // 4)
    src, dst = torch.rand(n), torch.empty(n)
    return 2.0 * n * 4 / _best_s(lambda: dst.copy_(src), repeats, clock)


def measure_matmul_flops(size: int = 1024, repeats: int = 8, clock=time.perf_counter) -> float:  # type: ignore[no-untyped-def]
    """FLOP/s of the best fp32 square matmul (2·size³ FLOPs)."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    out = torch.empty(size, size)
    return 2.0 * size**3 / _best_s(lambda: torch.mm(a, b, out=out), repeats, clock)


def measure_cpu(threads: int = 1, quick: bool = False, clock=time.perf_counter) -> GPUSpec:  # type: ignore[no-untyped-def]
    """Measure this machine and return its spec (a few seconds; `quick` for tests). `clock`
    times each call (validate e2e passes `time.thread_time` to match how it times steps)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        llc = _cache_bytes("3") or _cache_bytes("2") or 32e6
        # Far past the cache, but a VM may report its host's whole L3: cap the buffer at 1 GB.
        buffer = 256e6 if quick else min(max(4 * llc, 256e6), 1e9)
        bandwidth = measure_bandwidth(buffer, repeats=4 if quick else 8, clock=clock)
        size = 512 if quick else 1024
        flops = max(
            measure_matmul_flops(n, repeats=3 if quick else 8, clock=clock)
            for n in (size, size // 2)
        )
    finally:
        torch.set_num_threads(previous)
    date = dt.date.today().isoformat()
    how = f"measured by `rooflens calibrate cpu` on {date}, {threads} thread(s)"
    if clock is not time.perf_counter:
        how += f", timed on {getattr(clock, '__name__', 'another clock')}"
    return GPUSpec(
        id="cpu",
        name=f"{_cpu_name()} ({threads} thread{'s' if threads > 1 else ''})",
        vendor="cpu",
        architecture=os.uname().machine,
        memory_bytes=_memory_bytes(),
        hbm_bytes_per_s=bandwidth,
        peak_flops_per_s={"fp32": flops},
        sparsity_2_4_multiplier=1.0,
        l2_bytes=llc,
        sm_count=threads,
        smem_per_sm_bytes=_cache_bytes("2") or 1e6,
        nvlink_bytes_per_s=0.0,
        pcie_bytes_per_s=bandwidth,
        sources={
            "memory_bytes": "/proc/meminfo MemTotal",
            "hbm_bytes_per_s": f"{how}: best of copies of {buffer / 1e6:.0f} MB (read + write)",
            "peak_flops_per_s": f"{how}: best fp32 torch.mm, n = {size} or {size // 2} (2n³ FLOPs)",
            "sparsity_2_4_multiplier": "CPUs have no 2:4 sparse units",
            "l2_bytes": "sysfs cpu0 cache: last-level cache size",
            "sm_count": "threads used for the measurement (one 'SM' per thread)",
            "smem_per_sm_bytes": "sysfs cpu0 cache: L2 size (per-core on-chip memory)",
            "nvlink_bytes_per_s": "no GPU link",
            "pcie_bytes_per_s": "no host link: set to the memory bandwidth (unused)",
        },
    )


def spec_path(root: Path = RESULTS_DIR) -> Path:
    return root / "cpu" / SPEC_NAME


def save_cpu_spec(spec: GPUSpec, root: Path = RESULTS_DIR) -> Path:
    text = "# This machine as a spec, written by `rooflens calibrate cpu` (validate/cpu.py).\n"
    return atomic_write_text(
        spec_path(root), text + yaml.safe_dump(spec.model_dump(), sort_keys=False)
    )


def load_cpu_spec(root: Path = RESULTS_DIR) -> GPUSpec:
    path = spec_path(root)
    if not path.is_file():
        raise RooflensError(f"no CPU spec at {path}: run `rooflens calibrate cpu` first")
    return get_gpu(str(path))
