"""The one-page summary of a `scripts/gpu_check.sh` run (issue 25): provenance, accuracy of the
cost model per operator class (kernel suite) and per end-to-end phase, speed of every kernel
against its target (old and new variants), and where each result file went.

    python scripts/gpu_check_summary.py --out DIR [--validate CSV] [--kernels CSV]
        [--e2e CSV]... [--provenance FILE] [--steps FILE] [--files FILE]...
    python scripts/gpu_check_summary.py --print-provenance   # the script's first step

Every input is optional: a step the script skipped leaves its section saying so.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]


def _table(frame: pd.DataFrame) -> str:
    text = frame.copy()
    for column in text.columns:
        if text[column].dtype.kind == "f":
            text[column] = text[column].map(lambda v: "—" if pd.isna(v) else f"{v:.3g}")
    head = "| " + " | ".join(map(str, text.columns)) + " |"
    rule = "| " + " | ".join("---" for _ in text.columns) + " |"
    return "\n".join(
        [head, rule, *("| " + " | ".join(map(str, r)) + " |" for r in text.to_numpy())]
    )


def kernel_accuracy(path: Path) -> str:
    """Median and p90 |predicted / measured − 1| per operator class and implementation."""
    from rooflens.validate.compare import join
    from rooflens.validate.runs import as_run

    results = as_run(pd.read_csv(path))
    # A CPU run names its measured spec relative to the results root (two folders up).
    spec = path.parent.parent / str(results["gpu"].iloc[0])
    if spec.is_file():
        results["gpu"] = str(spec)
    gpu_known = not str(results["gpu"].iloc[0]).endswith(".yaml")
    profiles = ("ideal", "calibrated") if gpu_known else ("ideal",)
    joined = join(results, profiles)
    joined["impl"] = joined["impl"].astype(str).str.split(":").str[0]
    rows = []
    for (op, dtype, impl), group in joined.groupby(["op", "dtype", "impl"]):
        row = {"op": op, "dtype": dtype, "impl": impl, "rows": len(group)}
        for profile in profiles:
            err = pd.to_numeric(group[f"error_{profile}"], errors="coerce").abs()
            row[f"{profile} median |err|"] = err.median()
            row[f"{profile} p90 |err|"] = err.quantile(0.9)
        rows.append(row)
    return _table(pd.DataFrame(rows)) + "\n\n" + BASELINES_NOTE


# What the torch rows are, so a reader does not take the unfused add + norm for an engine's.
BASELINES_NOTE = (
    "impl torch = the baselines: torch.mm (cuBLAS; also the 16-bit reference of weight-only "
    "GEMMs), torch._scaled_mm (cuBLASLt FP8 with per-tensor scales: the dtype fp8 GEMMs), SDPA "
    "(prefill, and decode over a 16-bit cache), and F.rms_norm(x + residual), whose add runs as "
    "a kernel of its own where engines fuse it into the norm (its error is no production "
    "figure). Errors are predicted / measured − 1, unitless."
)


def e2e_accuracy(paths: list[Path]) -> str:
    """Per file (eager, compiled) and phase: median |predicted / measured − 1| of whole steps."""
    rows = []
    for path in paths:
        frame = pd.read_csv(path)
        steps = frame[frame["op"].eq("total")]
        for (mode, phase), group in steps.groupby(["mode", "phase"]):
            signed = pd.to_numeric(group["error"], errors="coerce")
            err = signed.abs()
            rows.append({"file": path.name, "mode": mode, "phase": phase, "scenarios": len(group),
                         "median |err|": err.median(), "max |err|": err.max(),
                         "median err (< 0: predicted fast)": signed.median(),
                         "median measured_s": group["measured_s"].median()})  # fmt: skip
    return _table(pd.DataFrame(rows)) if rows else "no end-to-end rows"


def kernel_speed(path: Path) -> str:
    """Per kernel: the benchmark's summary (new and old variants) and the target check."""
    from benchmarks import kernel_table as kt

    frame = pd.read_csv(path)
    targets = kt.check_targets(frame, kt.load_targets())
    # The same targets checked on the old variant's speedups, side by side.
    old = kt.check_targets(frame.assign(speedup=frame["speedup_v1"]), kt.load_targets())
    targets["now_v1"] = old["now"].where(targets["metric"].eq("speedup"))
    targets["met"] = targets["met"].map({True: "yes", False: "no", None: "no rows"})
    return f"{_table(kt.summarize(frame))}\n\n{_table(targets)}"


def _text(path: Path | None) -> str:
    return path.read_text().strip() if path and path.is_file() else "none recorded"


def section(title: str, make, *args) -> str:  # type: ignore[no-untyped-def]
    if not all(args) or any(isinstance(a, Path) and not a.is_file() for a in args):
        return f"## {title}\n\nskipped: the step left no results\n"
    try:
        return f"## {title}\n\n{make(*args)}\n"
    except Exception as error:  # a summary never hides the other sections
        return f"## {title}\n\nnot computed: {type(error).__name__}: {error}\n"


def print_provenance() -> None:
    """The provenance step: device, driver, CUDA, torch, triton, commit, date (and the SMs)."""
    import torch

    from rooflens.validate.store import device_provenance

    info = device_provenance("cuda" if torch.cuda.is_available() else "cpu")
    for key in ("device_name", "driver", "cuda", "torch", "triton", "git_commit", "date"):
        print(f"{key}: {info.get(key, 'unknown')}")
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        print(f"capability: sm_{p.major}{p.minor}; SMs: {p.multi_processor_count}; "
              f"memory: {p.total_memory / 2**30:.1f} GiB")  # fmt: skip
        print(f"power and clocks: {board_state()}")


# What tells a board's own limits from the model's error: a GPU capped below its datasheet
# power, or held at a lower clock, runs every compute-bound kernel slower (first H200 run,
# 2026-11-28: cuBLAS bf16 at 672 TFLOP/s where our H100 measured 782).
BOARD_QUERY = ("power.limit,power.default_limit,power.max_limit,clocks.sm,clocks.max.sm,"
               "clocks.mem,clocks.max.mem,temperature.gpu,clocks_event_reasons.active")  # fmt: skip


def board_state() -> str:
    """nvidia-smi's power limits, clocks, temperature and active clock-event reasons, one line
    (a driver that knows no field of the query answers without the last one)."""
    import subprocess

    fields = BOARD_QUERY.split(",")
    for query in (fields, fields[:-1]):
        try:
            done = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(query)}",
                                   "--format=csv,noheader"], capture_output=True, text=True,
                                  timeout=10, check=True)  # fmt: skip
        except subprocess.CalledProcessError:
            continue
        except (OSError, subprocess.SubprocessError) as error:
            return f"unknown (nvidia-smi: {type(error).__name__})"
        if not done.stdout.strip():
            return "unknown (nvidia-smi printed nothing)"
        values = done.stdout.strip().splitlines()[0].split(", ")
        return "; ".join(f"{k}={v}" for k, v in zip(query, values, strict=False))
    return "unknown (nvidia-smi refused the query)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--print-provenance", action="store_true", help="print it and stop")
    parser.add_argument("--out", default="", help="folder for summary.md")
    parser.add_argument("--validate", default="", help="the kernel suite's results CSV")
    parser.add_argument("--kernels", default="", help="benchmarks/results/<gpu>/kernels.csv")
    parser.add_argument("--e2e", action="append", default=[], help="an e2e results CSV")
    parser.add_argument("--provenance", default="", help="the provenance step's output")
    parser.add_argument("--files", action="append", default=[], help="a result file to list")
    parser.add_argument("--steps", default="", help="the step log (name, status, seconds)")
    args = parser.parse_args(argv)
    if args.print_provenance:
        print_provenance()
        return 0
    if not args.out:
        parser.error("--out is required")
    e2e = [Path(p) for p in args.e2e if Path(p).is_file()]
    prov = Path(args.provenance) if args.provenance else None
    steps = Path(args.steps) if args.steps else None
    validate = Path(args.validate) if args.validate else None
    kernels = Path(args.kernels) if args.kernels else None
    files = "\n".join(f"- {f}" for f in args.files if Path(f).is_file())
    speed = "Speed per kernel against its target (v2 = now, v1 = 2026-11-24 kernels)"
    parts = [
        "# GPU check summary (scripts/gpu_check.sh)\n",
        f"## Provenance\n\n```\n{_text(prov)}\n```\n",
        f"## Steps\n\n```\n{_text(steps)}\n```\n",
        section("Accuracy per operator class (kernel suite)", kernel_accuracy, validate),
        section("Accuracy per end-to-end phase", e2e_accuracy, e2e or None),
        section(speed, kernel_speed, kernels),
        f"## Result files\n\n{files}\n",
    ]
    out = Path(args.out) / "summary.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(parts)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(out)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
