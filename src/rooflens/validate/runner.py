"""Time suite rows on a device: our Triton kernels and the torch baselines.

GPU (`time_gpu`): every call is captured in one CUDA graph that runs each input copy once
(copies rotate inside the graph, enough of them to exceed twice the L2, so no call finds its
operands cached), and `triton.testing.do_bench` times replays of it: median and 20th/80th
percentiles, divided by the calls per replay. Under a graph no Python launch cost reaches the
clock, which is what serving engines run (decode steps replay as graphs) and what calibration
must learn (`timing = cuda_graph`). A call that cannot be captured (it synchronises with the
host, allocates in a way capture forbids, ...) is timed with do_bench alone and says why
(`timing = do_bench_fallback: <reason>`). Every call also gets `eager_s`: wall time per call of
back-to-back eager launches from Python, so host overhead is a figure of its own, not hidden
in the kernel time. CPU (`time_cpu`): `time.perf_counter` around each call, copies rotated,
warm-up first (there `eager_s` is the same median). Nothing here touches CUDA unless a GPU run
is asked for; `time_calls` holds the decision with the device parts passed in.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from typing import cast

import numpy as np
import pandas as pd

from rooflens.hardware.errors import RooflensError
from rooflens.validate.cases import (
    BASELINE_ONLY,
    Call,
    baseline_name,
    input_bytes,
    make_calls,
)
from rooflens.validate.runs import as_run

QUANTILES = (0.2, 0.5, 0.8)
EAGER_REPS = 5  # rounds of eager launches over all copies (their median is eager_s)
REASON_CHARS = 120
Bench = Callable[[Callable[[], object]], list[float]]
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


def _reason(error: BaseException) -> str:
    """One short line for the `timing` column: exception type and its first line."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}"[:REASON_CHARS].rstrip(": ")


def eager_per_call_s(calls: list[Call], sync: Callable[[], None], reps: int = EAGER_REPS) -> float:
    """Median over `reps` rounds of the wall time per call of launching every copy back to
    back from Python and waiting for the device: launch-inclusive, as an eager engine sees it."""
    rounds = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        for call in calls:
            call()
        sync()
        rounds.append((time.perf_counter() - t0) / len(calls))
    return float(np.median(rounds))


def time_calls(
    calls: list[Call],
    bench: Bench,
    capture: Callable[[Callable[[], None]], Callable[[], None]],
    sync: Callable[[], None],
) -> dict[str, object]:
    """The timing decision, device parts passed in: `capture(fn)` records `fn` into a graph
    and returns its replay (raises when `fn` cannot be captured), `bench(fn)` gives the q20,
    median and q80 seconds of one `fn()`, `sync()` waits for the device."""
    n = len(calls)

    def run_all() -> None:
        for call in calls:
            call()

    run_all()  # compiles and autotunes before anything is timed or captured
    sync()
    eager_s = eager_per_call_s(calls, sync)
    try:
        replay = capture(run_all)
    except Exception as error:  # any capture failure means: not capturable
        sync()
        cycle = itertools.cycle(calls)
        q20, q50, q80 = bench(lambda: next(cycle)())
        timing = f"do_bench_fallback: {_reason(error)}"
    else:
        q20, q50, q80 = (v / n for v in bench(replay))
        timing = "cuda_graph"
    return {"measured_s": float(q50), "q20_s": float(q20), "q80_s": float(q80),
            "timing": timing, "eager_s": eager_s}  # fmt: skip


def time_gpu(calls: list[Call]) -> dict[str, object]:
    """Seconds per call (median, q20, q80) of `calls` captured in a CUDA graph, else do_bench;
    plus the eager launch-inclusive time per call."""
    import torch
    from triton.testing import do_bench

    def bench(fn: Callable[[], object]) -> list[float]:
        return [float(v) * 1e-3 for v in do_bench(fn, quantiles=list(QUANTILES))]

    def capture(fn: Callable[[], None]) -> Callable[[], None]:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn()  # warm-up on the capture stream, as torch.cuda.graphs requires
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        graph.replay()  # a graph that captured but cannot run fails here, not in do_bench
        torch.cuda.synchronize()
        return graph.replay

    return time_calls(calls, bench, capture, torch.cuda.synchronize)


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
            "timing": "perf_counter", "eager_s": float(q50)}  # fmt: skip


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
    """One result row per (suite row, impl): the suite's columns (describing the call that ran,
    validate/runs.py `as_run`) plus impl, measured_s, q20_s, q80_s, timing, eager_s and copies.
    `device` is 'cuda' or 'cpu' (where only torch runs); `quick` shortens the CPU's sampling.
    `skip(row, impl)` leaves out pairs already measured, and `sink` receives each measured
    row (a list of one) before `progress` prints it (see collect_rows)."""
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
    """The measuring loop: each suite row's impls timed, each measured row handed to `sink` the
    moment it is measured and before `progress` prints it (so an interrupted run keeps every
    row the screen showed), pairs `skip` names left out."""
    results: list[dict[str, object]] = []
    for _, row in suite.iterrows():
        copies = copies_for(row, cache_bytes, budget_bytes)
        cells: dict[str, object] = {str(k): v for k, v in row.to_dict().items()}
        for impl in impls:
            if impl != "torch" and row.get("kernel") in BASELINE_ONLY:
                continue  # no kernel of ours for this row: its baseline alone
            label = (f"{impl}:{row['kernel']}" if impl.startswith("triton")
                     else f"torch:{baseline_name(row)}")  # fmt: skip
            if skip is not None and skip(cells, label):
                continue
            calls = make_calls(row, impl, device, copies)
            timing = timer(calls)
            measured = {**cells, "impl": label, "copies": copies, **timing}
            del calls
            if sink is not None:  # stored before it is shown: a Ctrl-C loses nothing printed
                sink([measured])  # as measured: the store's readers apply `as_run`
            results.append(measured)
            if progress:
                seconds = cast(float, timing["measured_s"])
                progress(f"{label} {_describe(row)}: {seconds * 1e6:.1f} us")
    return as_run(pd.DataFrame(results))


def _describe(row: pd.Series) -> str:
    cols = [c for c in ("m", "n", "k", "batch", "seq_len", "kv_len", "n_heads", "n_kv_heads",
                        "rows", "hidden") if c in row and pd.notna(row[c])]  # fmt: skip
    return ", ".join(f"{c}={int(float(row[c]))}" for c in cols)
