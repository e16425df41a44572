"""Kernel benchmark (issue 13): every Triton kernel against the torch call of the same shape.

For each kernel × shape of the validator's suite (validate/suite.py) it times our Triton kernel
and the torch baseline through the validator's own runner (validate/cases.py builds the calls,
validate/runner.py times them; on a GPU every call inside a CUDA graph, operands rotated past
L2), measures the device's roofs in the same run (a large bf16 `torch.mm` and a device copy),
and, beside them, the variant of each kernel the 2026-11-24 H100 run measured (`triton_v1`,
issue 25), and writes benchmarks/results/<gpu>/kernels.csv (columns:
benchmarks/kernel_table.py, with the run's provenance on every row) and kernels.md (per-kernel
summary against the issue's targets).

    python -m benchmarks.kernels --device cuda [--quick] [--kernels K,...] [--limit N] [--merge]
    python -m benchmarks.kernels --device cpu --small       # CI: TRITON_INTERPRET=1, tiny shapes
    python -m benchmarks.kernels --from-measured DIR        # a validator run already on disk

`--from-measured DIR` reads DIR/triton/*.csv (the validator's results format, each Triton row
beside the torch row of the same shape) and the provenance and measured roofs from DIR/README.md.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: its own folder would shadow the `kernels` package
    sys.path[0] = str(Path(__file__).resolve().parents[1])

import numpy as np
import pandas as pd

from benchmarks import kernel_table as kt
from rooflens.hardware.errors import RooflensError
from rooflens.io.files import atomic_write_csv, atomic_write_text

RESULTS = Path(__file__).parent / "results"
GEMM_SIZE = 8192  # bf16 cuBLAS roof: 8192³ reaches the plateau on A100/H100-class GPUs
COPY_BYTES = 2 * 2**30  # device copy roof: 2 GiB, far past any L2
# --small (CPU, Triton interpreter): awkward shapes, fp16 (the interpreter mishandles bf16).
SMALL = [
    {"kernel": "gemm", "op": "gemm", "m": 17, "n": 96, "k": 80, "group_size": 128,
     "weight_dtype": "fp16"},
    {"kernel": "w8a16_gemm", "op": "gemm", "m": 3, "n": 72, "k": 256, "group_size": 64,
     "weight_dtype": "int8"},
    {"kernel": "w4a16_gemm", "op": "gemm", "m": 5, "n": 40, "k": 256, "group_size": 128,
     "weight_dtype": "int4"},
    {"kernel": "flash_attention", "op": "attention_prefill", "batch": 1, "seq_len": 40,
     "n_heads": 4, "n_kv_heads": 2, "head_dim": 64},
    {"kernel": "decode_attention", "op": "attention_decode", "batch": 2, "kv_len": 70,
     "n_heads": 4, "n_kv_heads": 2, "head_dim": 64},
    {"kernel": "paged_decode_attention", "op": "attention_decode", "batch": 2, "kv_len": 70,
     "n_heads": 4, "n_kv_heads": 2, "head_dim": 64},
    {"kernel": "rmsnorm", "op": "norm", "rows": 9, "hidden": 320, "residual": 1},
]  # fmt: skip


QUICK_SHAPES = 10  # --quick: shapes per kernel, as many as the 2026-11-24 H100 run measured


def spread(suite: pd.DataFrame, per_kernel: int) -> pd.DataFrame:
    """At most `per_kernel` shapes of each kernel, evenly spaced from its smallest working set
    to its largest (so a short run still spans decode GEMVs to 16k-token prefill)."""
    from rooflens.validate.suite import working_set_bytes

    picked = []
    for _, rows in suite.assign(_ws=working_set_bytes(suite)).groupby("kernel", sort=False):
        rows = rows.sort_values("_ws", kind="stable")
        index = np.unique(np.linspace(0, len(rows) - 1, min(per_kernel, len(rows))).round())
        picked.append(rows.iloc[index.astype(int)])
    return pd.concat(picked).drop(columns="_ws").reset_index(drop=True)


def small_suite() -> pd.DataFrame:
    frame = pd.DataFrame(SMALL).assign(dtype="fp16", name="small", phase="small")
    frame["kv_dtype"] = frame["op"].map(lambda op: "fp16" if op.startswith("attention") else None)
    return frame


def _median_s(fn, device: str, reps: int) -> float:
    if device == "cuda":
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=25, rep=200, return_mode="median")) * 1e-3
    fn()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return float(pd.Series(samples).median())


def measure_roofs(device: str) -> tuple[float, float, str]:
    """(FLOP/s, bytes/s, how) measured now: a large matmul, and a copy (bytes read + written)."""
    import torch

    dtype, size, copy_bytes = (
        (torch.bfloat16, GEMM_SIZE, COPY_BYTES)
        if device == "cuda"
        else (torch.float32, 1024, 2**26)
    )
    a, b = (torch.randn(size, size, dtype=dtype, device=device) for _ in range(2))
    out = torch.empty_like(a)
    flops = 2.0 * size**3 / _median_s(lambda: torch.mm(a, b, out=out), device, 5)
    src = torch.randn(copy_bytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    bandwidth = 2.0 * copy_bytes / _median_s(lambda: dst.copy_(src), device, 5)
    how = (f"measured in this run: torch.mm {size}³ {str(dtype).split('.')[-1]} "
           f"{flops / 1e12:.1f} TFLOP/s, copy of {copy_bytes / 2**30:g} GiB "
           f"{bandwidth / 1e12:.3f} TB/s (read + write)")  # fmt: skip
    return flops, bandwidth, how


def measure(args: argparse.Namespace) -> tuple[pd.DataFrame, dict[str, str], str]:
    """Time the suite on this device; returns (pairs, provenance, gpu id)."""
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # read when kernels are decorated: before importing
    import torch

    from rooflens.validate.cases import IMPLS, make_calls
    from rooflens.validate.runner import copies_for, gpu_preset_for, time_cpu, time_gpu
    from rooflens.validate.store import device_provenance

    if args.device == "cuda":
        from rooflens.hardware.presets import get_gpu
        from rooflens.validate.suite import full_suite, with_fp8_kv

        if not torch.cuda.is_available():
            raise RooflensError("no CUDA GPU found: use --device cpu --small, or run on a GPU")
        gpu = args.gpu or gpu_preset_for(torch.cuda.get_device_name())
        suite, cache_bytes = full_suite(), get_gpu(gpu).l2_bytes
        if torch.cuda.get_device_capability() >= (8, 9):  # fp8 KV converts in hardware
            suite = with_fp8_kv(suite)
    else:
        if not args.small:
            raise RooflensError("--device cpu runs only the tiny --small shapes (interpreter)")
        gpu, suite, cache_bytes = "cpu", small_suite(), 0.0
    if args.kernels:
        unknown = set(args.kernels.split(",")) - set(suite["kernel"])
        if unknown:
            known = ", ".join(sorted(suite["kernel"].unique()))
            raise RooflensError(f"unknown kernel(s) {', '.join(sorted(unknown))}; use {known}")
        suite = suite[suite["kernel"].isin(args.kernels.split(","))]
    limit = args.limit or (QUICK_SHAPES if args.quick else 0)
    if limit:
        suite = spread(suite, limit)
    rows = []
    for _, row in suite.iterrows():
        copies = copies_for(row, cache_bytes, 4e9)
        for impl in IMPLS:  # new kernels, the 2026-11-24 ones, torch: side by side (issue 25)
            calls = make_calls(row, impl, args.device, copies)
            if args.device == "cuda":  # every call inside a CUDA graph (issue 13)
                timing = time_gpu(calls)
            else:
                timing = time_cpu(calls, min_time_s=0.0, max_reps=args.reps)
            rows.append({**row.to_dict(), "impl": f"{impl}:{row['kernel']}", "gpu": gpu, **timing})
            print(f"{impl:9s} {row['kernel']:24s} {timing['measured_s'] * 1e6:10.2f} µs",
                  file=sys.stderr)  # fmt: skip
            del calls
    info = device_provenance(args.device)
    provenance = {"device_name": info["device_name"], "driver": info["driver"],
                  "cuda": info["cuda"], "torch_version": info["torch"],
                  "triton_version": info["triton"], "commit": info["git_commit"],
                  "date": info["date"]}  # fmt: skip
    return kt.pair_measured(pd.DataFrame(rows)), provenance, gpu


README_FIELDS = {  # provenance key -> pattern in a measurement folder's README.md
    "date": r"Measured on (\d{4}-\d{2}-\d{2})",
    "device_name": r"Measured on [\d-]+ on one `([^`]+)`",
    "driver": r"driver ([\d.]+)",
    "cuda": r"CUDA ([\d.]+)",
    "torch_version": r"torch ([\w.+]+)",
    "triton_version": r"triton ([\d.]+)",
    "commit": r"commit `([0-9a-f]+)`",
}
README_ROOFS = (r"cuBLAS bf16 GEMM[^;]*?([\d.]+)–([\d.]+) TFLOP/s",
                r"device copy[^.]*?([\d.]+)–([\d.]+) TB/s")  # fmt: skip


def from_measured(folder: Path) -> tuple[pd.DataFrame, dict[str, str], tuple[float, float, str]]:
    """Pairs, provenance and the README's measured roofs (the upper end of each range)."""
    files = sorted((folder / "triton").glob("*.csv"))
    readme = folder / "README.md"
    if not files or not readme.is_file():
        raise RooflensError(f"{folder} needs triton/*.csv and README.md (a validator run)")
    text = " ".join(readme.read_text().split())
    provenance = {}
    for key, pattern in README_FIELDS.items():
        found = re.search(pattern, text)
        provenance[key] = found.group(1) if found else "unknown"
    roofs = [re.search(p, text) for p in README_ROOFS]
    if not all(roofs):
        raise RooflensError(f"{readme} states no measured roofs: pass --peak-tflops and --hbm-tbps")
    flops, bandwidth = float(roofs[0][2]) * 1e12, float(roofs[1][2]) * 1e12  # type: ignore[index]
    how = (
        f"measured in the same session ({readme.name}): cuBLAS bf16 GEMM 8192³ "
        f"{flops / 1e12:g} TFLOP/s, device copy {bandwidth / 1e12:g} TB/s (upper end of range)"
    )
    rows = pd.concat([pd.read_csv(f).assign(source=str(f)) for f in files], ignore_index=True)
    pairs = kt.pair_measured(rows)
    pairs["source"] = f"{folder.name}/triton/*.csv"
    return pairs, provenance, (flops, bandwidth, how)


def build(args: argparse.Namespace) -> tuple[pd.DataFrame, str, str]:
    from rooflens.hardware.presets import get_gpu

    if args.from_measured:
        pairs, provenance, (flops, bandwidth, how) = from_measured(Path(args.from_measured))
        gpus = pairs["gpu"].dropna().unique()
        gpu = args.gpu or (str(gpus[0]) if len(gpus) == 1 else "")
        if not gpu:
            raise RooflensError("the measurements name no single GPU: pass --gpu PRESET")
    else:
        pairs, provenance, gpu = measure(args)
        flops, bandwidth, how = measure_roofs(args.device)
        pairs["source"] = "benchmarks/kernels.py"
    if args.peak_tflops and args.hbm_tbps:
        flops, bandwidth = args.peak_tflops * 1e12, args.hbm_tbps * 1e12
        how = f"given on the command line: {args.peak_tflops:g} TFLOP/s, {args.hbm_tbps:g} TB/s"
    datasheet = None
    if gpu != "cpu":
        spec = get_gpu(gpu)
        datasheet = (spec.peak("bf16"), spec.hbm_bytes_per_s)
    frame = kt.add_derived(pairs.assign(gpu=gpu, **provenance), flops, bandwidth, datasheet)
    frame["roofs_source"] = how
    frame = kt.ordered(frame)
    line = (f"{gpu} ({provenance['device_name']}), commit {provenance['commit']}, "
            f"{provenance['date']}; roofs {how}")  # fmt: skip
    return frame, line, gpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--small", action="store_true", help="tiny shapes (CPU interpreter)")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SHAPES} shapes per kernel")
    parser.add_argument("--kernels", default="", help="comma-separated kernel names")
    parser.add_argument("--limit", type=int, default=0, help="at most N shapes per kernel")
    parser.add_argument("--merge", action="store_true", help="keep other kernels' stored rows")
    parser.add_argument("--reps", type=int, default=5, help="CPU: timed calls per impl")
    parser.add_argument("--gpu", default="", help="GPU preset id (default: from the device)")
    parser.add_argument("--from-measured", default="", metavar="DIR")
    parser.add_argument("--peak-tflops", type=float, default=0.0, help="override compute roof")
    parser.add_argument("--hbm-tbps", type=float, default=0.0, help="override memory roof")
    parser.add_argument("--results", default=str(RESULTS), help="results root folder")
    args = parser.parse_args(argv)
    try:
        frame, line, gpu = build(args)
    except RooflensError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    folder = Path(args.results) / gpu
    if args.merge and (folder / "kernels.csv").is_file():
        stored = pd.read_csv(folder / "kernels.csv")
        kept = stored[~stored["kernel"].isin(frame["kernel"])]
        frame = kt.ordered(pd.concat([kept, frame], ignore_index=True))
        if len(kept):
            names = ", ".join(sorted(kept["kernel"].unique()))
            line += f"; rows of {names} kept from the stored file"
    text = kt.report(frame, line)
    atomic_write_csv(folder / "kernels.csv", frame)
    atomic_write_text(folder / "kernels.md", text)
    print(text)
    print(f"wrote {len(frame)} rows to {folder / 'kernels.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
