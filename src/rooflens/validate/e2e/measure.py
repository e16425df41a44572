"""Measuring one scenario's steps: wall time, per-operator attribution, the host's launch cost.

- Timing: CUDA events around each call on a GPU (after a warm-up); on the CPU the calling
  thread's CPU clock (`time.thread_time`) when torch runs on one thread, else `perf_counter`.
  The thread clock leaves out the time slices a shared machine's scheduler gives to other
  processes, which make wall time swing by 2-10x on a loaded 2-core box; with one torch thread
  every kernel runs on the calling thread, so nothing of the step is missed. The median and the
  20th/80th percentiles over repeats, as the results store keeps them.
- CUDA graphs: on a GPU the decode step is captured once (warmed up on a side stream first, as
  PyTorch's CUDA-graph recipe asks) and replayed, as fast servers run it (vLLM, SGLang,
  TensorRT-LLM). Data-dependent steps (MoE expert loops) cannot be captured and run eagerly.
- Attribution: on a GPU, `torch.profiler` runs with the decoder's operator scopes on, and each
  op's time is the device time of the kernels its CPU ops launched beneath its scope. On the CPU
  (whose profiler timestamps are wall clock) each scope reads the thread CPU clock instead, so
  an op's time is its kernels plus the dispatch inside it. The median over a few calls. Python
  between scopes, gaps and launch latency belong to no op: they are what the measured step time
  leaves over (`unattributed`).
- Host launch cost: the same decoder at tiny width (compute ≈ 0), eager, timed per operator
  row of its operator table: this machine's per-launch host cost for model/pricing/host.py. On the
  CPU
  each probe step starts from caches another stream has just swept, as a real step's weights
  sweep them (measured here: ~50 µs per row cold against ~14 µs hot).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch

from rooflens.validate.e2e.decoder import Decoder
from rooflens.validate.e2e.layout import with_layers
from rooflens.validate.e2e.scopes import Scopes

Step = Callable[[], object]
Clock = Callable[[], float]
FLUSH_BYTES = 256e6  # past a CPU's last-level cache (validate/cpu.py's quick copy buffer size)


@dataclass(frozen=True)
class Timing:
    median_s: float
    q20_s: float
    q80_s: float
    repeats: int


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def time_step(
    step: Step, device: str, repeats: int, warmup: int = 1, clock: Clock | None = None
) -> Timing:
    """Median and 20/80 % quantiles of `repeats` calls (CUDA events on a GPU; on the CPU
    `clock`, by default the thread clock with one torch thread, else perf_counter)."""
    for _ in range(warmup):
        step()
    synchronize(device)
    samples = []
    if clock is None:
        clock = time.thread_time if torch.get_num_threads() == 1 else time.perf_counter
    for _ in range(repeats):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e-3)
        else:
            t0 = clock()
            step()
            samples.append(clock() - t0)
    q20, median, q80 = np.quantile(samples, [0.2, 0.5, 0.8])
    return Timing(float(median), float(q20), float(q80), repeats)


def cuda_graph(step: Step) -> Step:
    """The step captured in a CUDA graph: returns its replay (static inputs inside `step`)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # warm up allocations and lazy inits outside the capture
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph.replay


def attribute(
    step: Step, scopes: Scopes, device: str, names: Iterable[str], runs: int = 5
) -> dict[str, float]:
    """Seconds per call beneath each named scope (see the module docstring): the median over
    `runs` separately measured calls, so one call slowed by a noisy neighbour does not count."""
    wanted = set(names)
    step()
    synchronize(device)
    per_run = []
    for _ in range(runs):
        if device == "cuda":
            per_run.append(_profiled(step, scopes, wanted))
            continue
        scopes.clock = {}
        try:
            step()
            per_run.append({name: scopes.clock.get(name, 0.0) for name in wanted})
        finally:
            scopes.clock = None
    return {name: float(np.median([r[name] for r in per_run])) for name in wanted}


def _profiled(step: Step, scopes: Scopes, wanted: set[str]) -> dict[str, float]:
    from torch.profiler import ProfilerActivity, profile

    scopes.on = True
    try:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step()
            synchronize("cuda")
    finally:
        scopes.on = False
    return _scope_times(prof.events(), wanted, "cuda")


def _scope_times(events: Iterable[object], wanted: set[str], device: str) -> dict[str, float]:
    from torch.autograd import DeviceType

    totals = dict.fromkeys(wanted, 0.0)
    for evt in events:
        if (
            getattr(evt, "device_type", None) != DeviceType.CPU
            or getattr(evt, "name", "") in wanted
        ):
            continue  # device rows come through their CPU op; a scope's own time is Python
        scope = _scope_of(evt, wanted)
        if scope is None:
            continue
        if device == "cuda":  # the kernels this CPU op launched (its children count their own)
            totals[scope] += sum(k.duration for k in evt.kernels) * 1e-6  # type: ignore[attr-defined]
        else:
            totals[scope] += evt.self_cpu_time_total * 1e-6  # type: ignore[attr-defined]
    return totals


def _scope_of(evt: object, wanted: set[str]) -> str | None:
    parent = getattr(evt, "cpu_parent", None)
    while parent is not None:
        if parent.name in wanted:
            return str(parent.name)
        parent = parent.cpu_parent
    return None


def measure_launch_s(spec_like: Decoder, device: str, repeats: int = 30) -> tuple[float, int]:
    """(seconds per operator row, rows) of an eager decode step of a tiny copy of the decoder.

    The copy keeps the layout (family, norms, MLP, MoE) at width 64, 2 layers and vocabulary 64,
    so its kernels do almost no work and the step time is the host issuing them.
    """
    from rooflens.model.ops.table import build_ops
    from rooflens.model.predict.api import make_scenario
    from rooflens.model.pricing.host import launches

    m = spec_like.ctx.spec
    kv = {"mha": 4, "mqa": 1}.get(m.attention, 2)  # keeps the attention kind (GQA: 4 / 2)
    tiny = with_layers(m, min(2, m.n_layers)).model_copy(
        update={
            "d_model": 64,
            "n_heads": 4,
            "n_kv_heads": kv,
            "head_dim": 16,
            "d_ff": 64,
            "vocab_size": 64,
            "d_ff_expert": 64 if m.is_moe else 0,
            "first_dense_layers": 0,
            "max_position_embeddings": 64 if m.max_position_embeddings else 0,
            "sliding_window": 4 if m.sliding_window else 0,
            "max_context": 64,
            "vision": None,
        }
    )
    dtype = spec_like.embed.weight.dtype
    model = Decoder(
        tiny, batch=1, capacity=16, dtype=dtype, device=device, backend=spec_like.ctx.backend
    ).init_weights()
    prompt = torch.randint(0, 64, (1, 8), device=device)
    token = torch.randint(0, 64, (1, 1), device=device)
    # the host's time: on the CPU its own clock (as steps are timed), with a GPU the wall clock
    # up to the synchronisation, since waiting for the device is not CPU time
    cpu = device == "cpu"
    clock = time.thread_time if cpu and torch.get_num_threads() == 1 else time.perf_counter
    # A CPU step streams its weights through the caches the interpreter's own data live in, so
    # its host work runs from cold caches (~4x slower here): stream a buffer past the
    # last-level cache before each probe step, untimed. A GPU's weights never pass the host's.
    scratch = torch.ones(int(FLUSH_BYTES // 4)) if cpu else None
    samples = []
    with torch.inference_mode():
        model(prompt, 0)
        for i in range(repeats + 3):  # 3 warm-up steps
            if scratch is not None:
                scratch.sum()
            start = clock()
            model(token, 8)
            synchronize(device)
            if i >= 3:
                samples.append(clock() - start)
    sc = make_scenario(
        tiny, "h100-sxm", batch=1, prompt_len=8, output_len=1, act_dtype="fp32", weight_dtype="fp32"
    )
    rows = launches(build_ops(sc, "decode", 1.0, 1.0, 9.0))
    return float(np.median(samples)) / rows, rows
