"""Batch-1 decode of an 8B model under `calibrated`, per GPU and engine: the TPOT of bf16 weights
and of int4 (weight-only, W4A16) and fp8 (W8A8 where the GPU has fp8 units) weights, and their
ratios to bf16 (issue 23's target: int4 ≤ 0.65x, fp8 ≤ 0.8x on every GPU with those kernels).

    python -m benchmarks.quant_decode [--model llama-3-8b] [--engine vllm] [--gpu ID]...

Prints one line per GPU and engine and exits 1 where a ratio misses its target. Then, for each
quantized kernel family that priced a line, what the engine's own kernels measure at batch 1 in
the tables its terms were fitted on (`fitted_on`, model/analysis/quant_vs_bf16.py): the median
and quartiles over the table's shapes (n, k ≥ 2,048) of the family's latency over bf16's at
m = 1, as a graph replay times them (`graph_latency_ms`: TensorRT-LLM 1.0's quantized GEMMs
were timed by TensorRT's profiler, one launch included). A ratio that misses its target over a
family measured at about that ratio is the kernel, not the model.
"""

from __future__ import annotations

import argparse
import sys
from functools import cache
from pathlib import Path

import pandas as pd

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import ENGINES, calibration_path
from rooflens.model.analysis.quant_vs_bf16 import fitted_on
from rooflens.model.predict.api import make_scenario, run
from rooflens.validate.aiconfigurator import graph_latency_ms
from rooflens.validate.measured_files import DEFAULT_ROOT

GPUS = ("a100-sxm-80gb", "h100-sxm", "b300", "rtx-pro-6000", "h200", "l40s", "b200")
TARGETS = {"int4": 0.65, "fp8": 0.80}  # at most this share of the bf16 TPOT


# What engines deploy under each name: int4 weight-only (W4A16, Marlin / TensorRT-LLM), fp8 as
# W8A8 (vLLM's `--quantization fp8`: activations quantized too, the KV cache left at bf16).
SCHEMES = {"bf16": {"weight_dtype": "bf16"},
           "int4": {"weight_dtype": "int4", "act_dtype": "bf16"},
           "fp8": {"weight_dtype": "fp8", "act_dtype": "fp8", "kv_dtype": "bf16"}}  # fmt: skip


FAMILIES = {"int4": "gemm:int4_wo", "fp8": "gemm:fp8"}  # the profile keys the schemes price with
MIN_DIM = 2048  # a decode GEMM's weight: n and k at least this


def measured_at_batch_1(gpu: str, engine: str, dtype: str) -> list[str]:
    """What the tables the family's terms were fitted on measure at m = 1 against bf16."""
    path = calibration_path(get_gpu(gpu))
    return [line for t in fitted_on(path, engine, FAMILIES[dtype])
            for line in [_batch_1_ratio(t.table, t.dtype)] if line]  # fmt: skip


@cache
def _batch_1_ratio(table: str, dtype: str) -> str:
    """One table's `dtype` latency over bf16's at m = 1 (median, quartiles); '' if it lacks one."""
    paths = sorted(Path(DEFAULT_ROOT).glob(table))
    if not paths:
        return f"{table} not found under {DEFAULT_ROOT} (ROOFLENS_MEASURED)"
    rows = pd.read_parquet(paths[-1])
    rows = rows.assign(latency=graph_latency_ms(rows))
    rows = rows[(rows.m == 1) & (rows.n >= MIN_DIM) & (rows.k >= MIN_DIM)]
    pivot = rows.pivot_table(index=["n", "k"], columns="gemm_dtype", values="latency")
    if dtype not in pivot or "bfloat16" not in pivot:
        return ""
    ratio = (pivot[dtype] / pivot["bfloat16"]).dropna()
    q1, median, q3 = ratio.quantile([0.25, 0.5, 0.75])
    return (f"{dtype}/bf16 at m = 1: median {median:.2f}x (quartiles {q1:.2f}-{q3:.2f}) over "
            f"{len(ratio)} shapes, {table}")  # fmt: skip


def sibling_note(model: str, gpu: str, engine: str, dtype: str, ratio: float) -> list[str]:
    """Where `gpu` prices another measured GPU's kernels (hardware/profiles.py
    `calibration_file`), that GPU's own ratio under the same terms, and how their HBM differs:
    a faster HBM shortens the weight streaming a narrower dtype shrinks, not the per-call floors
    or the step's other kernels. [] for a GPU with its own fit or the pooled one."""
    sibling = calibration_path(get_gpu(gpu)).stem
    if sibling in (gpu, "generic"):
        return []
    own = tpot_s(model, sibling, engine, dtype) / tpot_s(model, sibling, engine, "bf16")
    hbm = get_gpu(gpu).hbm_bytes_per_s / get_gpu(sibling).hbm_bytes_per_s
    why = (f"{gpu}'s HBM is {hbm:.2f}x {sibling}'s: it shortens the weight streaming that {dtype} "
           "shrinks, not the launch floors or the step's other kernels" if hbm > 1.05
           else f"the ratio is {sibling}'s own (its tables, below)")  # fmt: skip
    return [f"{gpu} {engine} {dtype} {ratio:.2f}x: {sibling}'s terms price {own:.2f}x on "
            f"{sibling}; {why}"]  # fmt: skip


def tpot_s(model: str, gpu: str, engine: str, scheme: str) -> float:
    sc = make_scenario(model, gpu, batch=1, prompt_len=1024, output_len=128,
                       profile="calibrated", engine=engine, **SCHEMES[scheme])  # fmt: skip
    return float(run(sc).tpot_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-3-8b")
    parser.add_argument("--engine", action="append", choices=ENGINES)
    parser.add_argument("--gpu", action="append")
    args = parser.parse_args(argv)
    missed = 0
    evidence: dict[str, list[str]] = {}
    borrowed: list[str] = []
    print(f"{args.model}, batch 1, prompt 1024, calibrated: TPOT in ms (ratio to bf16)")
    for gpu in args.gpu or GPUS:
        for engine in args.engine or ENGINES:
            bf16 = tpot_s(args.model, gpu, engine, "bf16")
            cells = [f"{gpu:14s} {engine:7s} bf16 {1e3 * bf16:6.2f}"]
            for dtype, target in TARGETS.items():
                if dtype == "fp8" and "fp8" not in get_gpu(gpu).peak_flops_per_s:
                    cells.append(f"{dtype} —  (no fp8 units)")
                    continue
                ratio = tpot_s(args.model, gpu, engine, dtype) / bf16
                ok = ratio <= target
                missed += not ok
                if not ok:
                    borrowed += sibling_note(args.model, gpu, engine, dtype, ratio)
                key = f"{dtype} {engine} (terms of {calibration_path(get_gpu(gpu)).stem})"
                if key not in evidence:  # GPUs that share terms share their tables
                    evidence[key] = measured_at_batch_1(gpu, engine, dtype)
                cells.append(
                    f"{dtype} {1e3 * ratio * bf16:6.2f} ({ratio:.2f}x{'' if ok else ' MISS'})"
                )
            print("  ".join(cells))
    if borrowed:
        print("\nMisses on a GPU priced with a measured GPU's kernels (its SM design's):")
        print("\n".join(f"  {line}" for line in borrowed))
    print("\nThe engines' own kernels at batch 1, in the tables the terms were fitted on:")
    for name, lines in evidence.items():
        for line in lines or ["no measured table named"]:
            print(f"  {name}: {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
