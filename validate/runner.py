"""Time suite rows on a device: our Triton kernels and the torch baselines.

GPU (`time_gpu`): `triton.testing.do_bench` (it flushes L2 before every timed call) returns the
median and the 20th/80th percentiles. Inputs rotate over enough copies to exceed twice the L2,
so no call finds its operands cached. Calls shorter than `GRAPH_BELOW_S` are timed inside one
CUDA graph that runs every copy once (launch overhead, ~5 µs from Python, would otherwise
dominate them; serving engines replay decode steps as graphs too), and the graph's time is
divided by the number of calls. CPU (`time_cpu`): `time.perf_counter` around each call, copies
rotated, warm-up first. Nothing here touches CUDA unless a GPU run is asked for.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from hardware.errors import RooflensError
from validate.cases import Call, baseline_name, input_bytes, make_calls

GRAPH_BELOW_S = 50e-6
QUANTILES = (0.2, 0.5, 0.8)
MAX_COPIES = 64
GPU_NAMES = {  # torch.cuda.get_device_name() fragment -> preset id (first match wins)
    "A100-SXM4-80GB": "a100-sxm-80gb", "A100-SXM4-40GB": "a100-sxm-40gb",
    "A100 80GB PCIe": "a100-pcie-80gb", "H100 80GB HBM3": "h100-sxm", "H100 PCIe": "h100-pcie",
    "H100 NVL": "h100-nvl", "H200": "h200", "GH200": "gh200", "B200": "b200", "L40S": "l40s",
    "A40": "a40", "A10G": "a10g", "A10": "a10", "L4": "l4", "RTX 4090": "rtx-4090",
    "RTX 3090": "rtx-3090", "V100": "v100-sxm-32gb",
}  # fmt: skip


def gpu_preset_for(device_name: str) -> str:
    """The GPU preset id of a CUDA device name, e.g. 'NVIDIA H100 80GB HBM3' -> 'h100-sxm'."""
    for fragment, preset in GPU_NAMES.items():
        if fragment in device_name:
            return preset
    raise RooflensError(f"no GPU preset matches '{device_name}'; pass --gpu PRESET")


def copies_for(row: pd.Series, cache_bytes: float, budget_bytes: float) -> int:
    """Input copies whose total exceeds 2x the cache, within a memory budget."""
    one = max(input_bytes(row), 1.0)
    want = math.ceil(2.0 * cache_bytes / one) + 1
    return int(max(1, min(want, MAX_COPIES, budget_bytes // one)))


def time_gpu(calls: list[Call], graph_below_s: float = GRAPH_BELOW_S) -> dict[str, object]:
    """Seconds per call (median, q20, q80) with do_bench; CUDA graph for short calls."""
    import torch
    from triton.testing import do_bench

    n = len(calls)

    def run_all() -> None:
        for call in calls:
            call()

    run_all()  # compiles and autotunes before anything is timed or captured
    torch.cuda.synchronize()
    estimate_s = float(do_bench(run_all, warmup=5, rep=20)) * 1e-3 / n
    if estimate_s < graph_below_s:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            run_all()  # warm-up on the capture stream, as torch.cuda.graphs requires
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            run_all()
        q = do_bench(graph.replay, quantiles=list(QUANTILES))
        per_call_ms, mode = [v / n for v in q], "cuda_graph"
    else:
        cycle = itertools.cycle(calls)
        per_call_ms = do_bench(lambda: next(cycle)(), quantiles=list(QUANTILES))
        mode = "do_bench"
    q20, q50, q80 = (float(v) * 1e-3 for v in per_call_ms)
    return {"measured_s": q50, "q20_s": q20, "q80_s": q80, "timing": mode}


def time_cpu(calls: list[Call], min_time_s: float = 0.2, max_reps: int = 200) -> dict[str, object]:
    """Seconds per call on the CPU (median, q20, q80) over rotated copies."""
    for call in calls[:2]:
        call()
    samples: list[float] = []
    start = time.perf_counter()
    for call in itertools.cycle(calls):
        t0 = time.perf_counter()
        call()
        samples.append(time.perf_counter() - t0)
        if len(samples) >= max_reps or (
            time.perf_counter() - start > min_time_s and len(samples) >= 5
        ):
            break
    q20, q50, q80 = np.quantile(samples, QUANTILES)
    return {"measured_s": float(q50), "q20_s": float(q20), "q80_s": float(q80),
            "timing": "perf_counter"}  # fmt: skip


def run_suite(
    suite: pd.DataFrame,
    device: str,
    impls: tuple[str, ...] = ("triton", "torch"),
    cache_bytes: float = 0.0,
    budget_bytes: float = 4e9,
    progress: Callable[[str], None] | None = None,
    quick: bool = False,
    skip: Callable[[dict[str, object], str], bool] | None = None,
    sink: Callable[[list[dict[str, object]]], None] | None = None,
) -> pd.DataFrame:
    """One result row per (suite row, impl): the suite's columns plus impl, measured_s, q20_s,
    q80_s, timing and copies. `device` is 'cuda' or 'cpu' (where only torch runs); `quick`
    shortens the CPU's sampling. `skip(row, impl)` leaves out pairs already measured, and
    `sink` receives each suite row's results as soon as they are measured (see collect_rows)."""
    if device == "cpu":
        impls = tuple(i for i in impls if i == "torch")
        min_time_s = 0.05 if quick else 0.2

        def timer(calls: list[Call]) -> dict[str, object]:
            return time_cpu(calls, min_time_s)

    else:
        timer = time_gpu  # type: ignore[assignment]
    return collect_rows(suite, impls, device, timer, cache_bytes, budget_bytes, progress,
                        skip, sink)  # fmt: skip


def collect_rows(
    suite: pd.DataFrame,
    impls: tuple[str, ...],
    device: str,
    timer: Callable[[list[Call]], dict[str, object]],
    cache_bytes: float,
    budget_bytes: float,
    progress: Callable[[str], None] | None,
    skip: Callable[[dict[str, object], str], bool] | None,
    sink: Callable[[list[dict[str, object]]], None] | None,
) -> pd.DataFrame:
    """The measuring loop: each suite row's impls timed, handed to `sink` as one batch the
    moment they are measured (so an interrupted run keeps them), pairs `skip` names left out."""
    results: list[dict[str, object]] = []
    for _, row in suite.iterrows():
        copies = copies_for(row, cache_bytes, budget_bytes)
        cells = row.to_dict()
        batch = []
        for impl in impls:
            label = f"triton:{row['kernel']}" if impl == "triton" else f"torch:{baseline_name(row)}"
            if skip is not None and skip(cells, label):
                continue
            calls = make_calls(row, impl, device, copies)
            timing = timer(calls)
            batch.append({**cells, "impl": label, "copies": copies, **timing})
            del calls
            if progress:
                progress(f"{label} {_describe(row)}: {float(timing['measured_s']) * 1e6:.1f} us")
        if sink is not None and batch:
            sink(batch)
        results.extend(batch)
    return pd.DataFrame(results)


def _describe(row: pd.Series) -> str:
    cols = [c for c in ("m", "n", "k", "batch", "seq_len", "kv_len", "n_heads", "n_kv_heads",
                        "rows", "hidden") if c in row and pd.notna(row[c])]  # fmt: skip
    return ", ".join(f"{c}={int(float(row[c]))}" for c in cols)
