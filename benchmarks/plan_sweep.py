"""Capacity-planner sweep speed: configurations per second, start-up (imports, presets) included.

Sweeps Llama-2-70B over every priced GPU preset, TP 1/2/4/8, four weight and two KV dtypes,
three schedulers, batch caps and replica counts (well over 100,000 configurations), and prints
configurations per second. If `llm-analysis` (Cheng Li, pip install llm-analysis) is importable
it times that peer in the same run on the same kind of configuration (one model, GPU, TP,
batch, dtype, prompt/output lengths -> latency and memory), start-up included, and prints how
many times faster rooflens is per configuration.

`--sweep-opt NAME[:k=v]` adds an optimization tried on and off (e.g. speculative decoding,
whose draft-and-verify steps the planner prices on the same grids), doubling the grid.

Run: python benchmarks/plan_sweep.py [--peer-configs N] [--sweep-opt OPT]
"""

from __future__ import annotations

import time

START = time.perf_counter()

import argparse  # noqa: E402
import importlib  # noqa: E402
import itertools  # noqa: E402
import logging  # noqa: E402
import platform  # noqa: E402

from rooflens.model.planner.plan_args import build_request  # noqa: E402
from rooflens.model.planner.sweep import run_sweep  # noqa: E402


def rooflens_rate(sweep_opts: list[str]) -> tuple[int, float]:
    space, workload = build_request(
        model="llama-2-70b", gpus="all", rate=20.0, prompt_len="1000", output_len="250",
        prompt_len_p99=4000, output_len_p99=1000, ttft_slo=2.0, tpot_slo=0.05,
        weight_dtypes="bf16,fp8,int8,int4", max_gpus=32, sweep_opts=sweep_opts,
    )  # fmt: skip
    result = run_sweep(space, workload)
    return result.n_configs, time.perf_counter() - START


def peer_rate(n_configs: int) -> tuple[int, float] | None:
    """llm-analysis on n configurations of the same kind, its import included."""
    start = time.perf_counter()
    try:
        analysis = importlib.import_module("llm_analysis.analysis")
    except ImportError:
        return None
    logging.getLogger("llm_analysis").setLevel(logging.ERROR)
    grid = itertools.cycle(
        itertools.product(
            ("a100-sxm-80gb", "a100-sxm-40gb", "h100-sxm-80gb", "h100-pcie-80gb", "a10g-pcie-24gb"),
            (1, 2, 4, 8),
            ("w16a16e16", "w8a16e16", "w4a16e16"),
            (1, 8, 32, 128),
        )
    )
    for _, (gpu, tp, dtype, batch) in zip(range(n_configs), grid, strict=False):
        try:
            analysis.infer(
                model_name="upstage_Llama-2-70b-instruct-v2", gpu_name=gpu, dtype_name=dtype,
                log_level="ERROR", batch_size_per_gpu=batch, tp_size=tp, seq_len=1000,
                num_tokens_to_generate=250,
            )  # fmt: skip
        except AssertionError:  # it asserts when the model does not fit: still evaluated
            pass
    return n_configs, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-configs", type=int, default=2000)
    parser.add_argument("--sweep-opt", action="append", default=[], help="tried on and off")
    args = parser.parse_args()
    n, elapsed = rooflens_rate(args.sweep_opt)
    ours = elapsed / n
    print(f"python {platform.python_version()} on {platform.machine()}")
    extra = f" (--sweep-opt {', '.join(args.sweep_opt)})" if args.sweep_opt else ""
    print(f"rooflens plan sweep{extra}: {n:,} configurations in {elapsed:.2f} s (start-up "
          f"included) = {n / elapsed:,.0f} configurations/s, {ours * 1e6:.2f} µs each")  # fmt: skip
    peer = peer_rate(args.peer_configs)
    if peer is None:
        print("llm-analysis not importable: peer comparison skipped (pip install llm-analysis)")
        return
    m, peer_s = peer
    theirs = peer_s / m
    print(f"llm-analysis infer(): {m:,} configurations in {peer_s:.2f} s (import included) "
          f"= {m / peer_s:,.0f} configurations/s, {theirs * 1e6:.1f} µs each")  # fmt: skip
    print(f"rooflens is {theirs / ours:,.0f}× faster per configuration")


if __name__ == "__main__":
    main()
