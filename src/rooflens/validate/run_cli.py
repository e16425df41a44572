"""`rooflens validate run`: times the kernel suite on this GPU (or CPU), stores the rows and
prints them against the predictions; the measuring is in validate/runner.py, the store in
validate/store.py.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from rooflens.argtypes import whole
from rooflens.hardware.errors import RooflensError
from rooflens.validate.cli_render import PROFILES, console, table

THREADS = whole(1, 4096)


def cmd_run(args: argparse.Namespace) -> int:
    torch = _import_torch()  # before anything that needs it: say what to install
    from rooflens.io.files import to_json
    from rooflens.validate.compare import band_check, join
    from rooflens.validate.runner import run_suite
    from rooflens.validate.store import RunWriter, device_provenance

    if args.device == "cpu":
        from rooflens.validate.cpu import load_cpu_spec, measure_cpu, save_cpu_spec, spec_path
        from rooflens.validate.suite import cpu_suite

        root = Path(args.results)
        if not spec_path(root).is_file():
            console.print("no CPU spec yet: measuring this machine (`rooflens calibrate cpu`)")
            save_cpu_spec(measure_cpu(args.threads, quick=args.quick), root)
        spec = load_cpu_spec(root)
        torch.set_num_threads(args.threads)
        suite, device_id, gpu_ref = cpu_suite(), "cpu", str(spec_path(root))
        profiles: tuple[str, ...] = ("ideal",)
        cache_bytes = min(spec.l2_bytes, 64e6)
    else:
        from rooflens.hardware.presets import get_gpu
        from rooflens.validate.runner import gpu_preset_for
        from rooflens.validate.suite import (
            full_suite,
            gpu_quick_suite,
            with_fp8_gemm,
            with_fp8_kv,
        )

        if not torch.cuda.is_available():
            raise RooflensError("no CUDA GPU found: use --device cpu, or run on a GPU machine")
        device_id = args.gpu or gpu_preset_for(torch.cuda.get_device_name())
        gpu_ref, cache_bytes = device_id, get_gpu(device_id).l2_bytes
        suite, profiles = gpu_quick_suite() if args.quick else full_suite(), PROFILES
        if torch.cuda.get_device_capability() >= (8, 9):  # FP8 tensor cores and converts
            suite = with_fp8_gemm(with_fp8_kv(suite))
    if args.kernels:
        wanted = [k.strip() for k in args.kernels.split(",")]
        unknown = sorted(set(wanted) - set(suite["kernel"]))
        if unknown:
            known = ", ".join(sorted(set(suite["kernel"])))
            raise RooflensError(f"--kernels: no kernel '{unknown[0]}' in this suite; use {known}")
        suite = suite[suite["kernel"].isin(wanted)]
    if args.limit:
        suite = suite.head(args.limit)
    impls = tuple(i.strip() for i in args.impl.split(","))
    if not impls or not set(impls) <= {"triton", "triton_v1", "torch"}:
        raise RooflensError(f"--impl {args.impl}: use triton, triton_v1, torch or a list")
    progress = None if args.json else console.print
    writer = RunWriter(device_id, "quick" if args.quick else "full",
                       device_provenance(args.device), Path(args.results), gpu_ref,
                       fresh=args.fresh)  # fmt: skip
    if writer.resumed and progress:
        progress(f"resuming {writer.path}: {writer.resumed} rows already measured (--fresh to "
                 "start over)")  # fmt: skip
    try:
        run_suite(suite, "cpu" if args.device == "cpu" else "cuda", impls, cache_bytes,
                  progress=progress, quick=args.quick, skip=writer.done,
                  sink=writer.append)  # fmt: skip
    except KeyboardInterrupt:
        print(f"interrupted: {len(writer.rows)} measured rows kept in {writer.path}; run the "
              "same command again to resume", file=sys.stderr)  # fmt: skip
        raise
    results = writer.frame()
    path = writer.finish()
    joined = join(results, profiles)
    ok, stats = band_check(joined)
    if args.json:
        print(to_json({"results": str(path), "band": stats, "ok": ok}))
    else:
        _print_rows(joined, profiles)
        console.print(f"wrote {len(results)} rows to {path}")
        console.print(f"measured / ideal: median {stats['median_ratio']:.2f}x, "
                      f"min {stats['min_ratio']:.2f}x, max {stats['max_ratio']:.2f}x")  # fmt: skip
    if args.check and not ok:
        print("error: measured/predicted outside the band (median in 0.5-5x, none < 0.3x)",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


def _print_rows(joined: pd.DataFrame, profiles: Sequence[str]) -> None:
    from rooflens.validate.runner import _describe

    frame = pd.DataFrame({"op": joined["op"], "shape": joined.apply(_describe, axis=1),
                          "impl": joined["impl"]})  # fmt: skip
    frame["measured (us)"] = joined["measured_s"] * 1e6
    if "eager_s" in joined:  # launch-inclusive eager time: host overhead made visible
        frame["eager (us)"] = joined["eager_s"] * 1e6
    for p in profiles:
        frame[f"{p} (us)"] = joined[f"predicted_{p}_s"] * 1e6
        frame[f"{p} error"] = joined[f"error_{p}"]
    console.print(table("Measured vs predicted", frame, [f"{p} error" for p in profiles]))


def _import_torch():  # type: ignore[no-untyped-def]
    """torch, or a one-line error saying what to install (it is an optional dependency)."""
    try:
        import torch
    except ImportError:
        raise RooflensError(
            "validate run needs torch (and triton on a GPU): pip install 'rooflens[validate]' "
            "(on a GPU machine, the CUDA build of torch first; see README)"
        ) from None
    return torch
