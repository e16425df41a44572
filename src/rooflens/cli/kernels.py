"""`rooflens kernels predict`: flops, bytes, predicted time and bound added to a CSV of single
kernel calls (the CSV contract of DESIGN.md; model/pricing/kernel_table.py does the work)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from rooflens.hardware.engines import engine_refusal
from rooflens.hardware.errors import FieldError, RooflensError
from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import DEFAULT_ENGINE, ENGINES, get_profile


def add_parser(sub: Any) -> None:
    p = sub.add_parser("kernels", help="single-kernel predictions (CSV contract of DESIGN.md)")
    ksub = p.add_subparsers(dest="kernels_command", required=True)
    kp = ksub.add_parser("predict", help="add flops, bytes, predicted_s, bound to a kernel CSV")
    kp.add_argument("input", help="CSV with an 'op' column: gemm, attention_prefill/decode "
                    "(also moe, mla_prefill/decode, norm, elementwise, embedding, comm: the "
                    "calls of predict --json's ops rows; "
                    "model/pricing/kernel_table.py)")  # fmt: skip
    kp.add_argument("--gpu", required=True)
    kp.add_argument("--profile", default="ideal", choices=("ideal", "calibrated"))
    kp.add_argument(
        "--engine",
        default=DEFAULT_ENGINE,
        choices=ENGINES,
        help=f"engine whose kernels price `calibrated` (default {DEFAULT_ENGINE})",
    )
    kp.add_argument("-o", "--output", help="write CSV here (atomically) instead of stdout")
    kp.set_defaults(handler=cmd_kernels_predict)


def cmd_kernels_predict(args: argparse.Namespace) -> int:
    from rooflens.io.files import atomic_write_csv, check_writable
    from rooflens.model.pricing.kernel_table import predict_kernels

    if args.output is not None:
        check_writable(args.output, "-o")
    path = Path(args.input)
    if path.is_dir():
        raise RooflensError(f"input '{path}' is a folder; give a CSV file")
    if not path.exists():
        raise RooflensError(f"input file not found: {path}")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise RooflensError(f"cannot read {path} as CSV: {str(exc).splitlines()[0]}") from None
    gpu = get_gpu(args.gpu)
    if why := engine_refusal(args.engine, gpu):
        raise FieldError("engine", why, "--engine", args.engine)
    result = predict_kernels(frame, gpu, get_profile(args.profile, gpu, args.engine))
    if args.output is not None:
        atomic_write_csv(args.output, result, "-o")
        print(f"wrote {len(result)} predictions to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(result.to_csv(index=False))
    return 0
