"""`rooflens calibrate fit` and `calibrate cpu`: fitting hardware/calibration/*.yaml from
measurements, and measuring this CPU into a spec; the fits are in validate/calibrate.py and
validate/generation.py, the CPU measurement in validate/cpu.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rooflens.validate.cli_render import console, training_table_of


def cmd_fit(args: argparse.Namespace) -> int:
    from rooflens.hardware.presets import read_data_file
    from rooflens.hardware.profiles import CALIBRATION_DIR, Profile
    from rooflens.io.files import check_writable
    from rooflens.validate.generation import generation_profiles
    from rooflens.validate.profile_fit import fit_all, write_profile

    out = Path(args.out or CALIBRATION_DIR)
    check_writable(out / "generic.yaml", "--out folder's profile")  # before the fit, not after
    table = training_table_of(args, include_own=args.own_kernels)
    written = fit_all(table, out)
    if args.rule == "generation":  # opt-in: docs/validation.md, "Accuracy on a GPU ..."
        pooled = Profile.model_validate(read_data_file(written["generic"]))
        for gpu_id, profile in generation_profiles(table, pooled).items():
            written[gpu_id] = write_profile(profile, out / f"{gpu_id}.yaml")
    for name, path in written.items():
        console.print(f"{name}: wrote {path}")
    return 0


def cmd_cpu(args: argparse.Namespace) -> int:
    from rooflens.validate.cpu import measure_cpu, save_cpu_spec

    spec = measure_cpu(args.threads, quick=args.quick)
    path = save_cpu_spec(spec, Path(args.results))
    console.print(f"{spec.name}: memory {spec.hbm_bytes_per_s / 1e9:.1f} GB/s, fp32 matmul "
                  f"{spec.peak_flops_per_s['fp32'] / 1e9:.1f} GFLOP/s; wrote {path}")  # fmt: skip
    return 0
