"""`rooflens validate e2e`: arguments -> validate/e2e/run.py -> a table per scenario, JSON, CSV.

    rooflens validate e2e --model <preset | spec file | HF config.json> --device cuda|cpu
        [--batch 1,8,64] [--context 1024,8192] [--images N] [--dtype bf16] [--impl torch|triton]
        [--compile] [--layers N] [--json] [-o results.csv]

On a GPU the prediction uses the GPU's preset (from the CUDA device name, or --gpu) and the
calibrated profile. On the CPU it uses the spec `rooflens calibrate cpu` measures
(validate/cpu.py), re-measured at the start of the run (a few seconds) so the roofs are this
session's, as DESIGN.md asks, and timed on the clock the steps are timed with (the thread's CPU
clock with one thread, measure.py): on a loaded machine wall time is a share of the cores, and
the bandwidth a wall clock sees drops 3x with it. It is kept under <results>/e2e/cpu/spec.yaml;
--stored-spec uses `calibrate cpu`'s own instead. The profile is `ideal`, which on a measured
spec is already calibrated.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from rooflens.hardware.errors import RooflensError

DEFAULT_DTYPE = {"cuda": "bf16", "cpu": "fp32"}


# A batch a single device can hold while every sequence keeps at least one token of KV cache;
# the bound also keeps the memory check's per-chunk loop short (issue 27: 99999999999 hung).
MAX_BATCH = 65536


def _ints(text: str, flag: str, hi: int, why: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise RooflensError(f"{flag} takes comma-separated whole numbers, got '{text}'") from None
    if not values or min(values) < 1:
        raise RooflensError(f"{flag} values must be ≥ 1, got '{text}'")
    if max(values) > hi:
        raise RooflensError(f"{flag} {max(values)} is over {hi:,} ({why})")
    return values


def _torch(device: str):  # type: ignore[no-untyped-def]
    try:
        import torch
    except ImportError:
        raise RooflensError(
            "validate e2e runs the model in torch: pip install torch "
            "(a CUDA build from pytorch.org for --device cuda)"
        ) from None
    if device == "cuda" and not torch.cuda.is_available():
        raise RooflensError(
            f"no CUDA GPU visible to torch {torch.__version__}: install a CUDA build of torch "
            "(pytorch.org) on a GPU machine, or use --device cpu"
        )
    return torch


def _free_bytes(device: str) -> float:
    import torch

    if device == "cuda":
        return float(torch.cuda.mem_get_info()[0])
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return float(line.split()[1]) * 1024
    raise RooflensError("cannot read MemAvailable from /proc/meminfo to check memory")


def cmd_e2e(args: argparse.Namespace) -> int:
    from rooflens.io.files import check_writable
    from rooflens.model.predict.scenario import DEFAULT_OVERHEAD_BYTES
    from rooflens.model.pricing.host import EAGER_LAUNCH_S
    from rooflens.model.specs.presets import get_model
    from rooflens.validate.e2e.backend import make_backend
    from rooflens.validate.e2e.layout import check_supported
    from rooflens.validate.e2e.predict import RunSetup, image_tokens
    from rooflens.validate.e2e.run import TORCH_DTYPES, RunConfig, run

    if args.output is not None:
        check_writable(args.output, "-o")  # before the run, not after it
    spec = get_model(args.model)
    check_supported(spec)
    batches = _ints(args.batch, "--batch", MAX_BATCH, "more sequences than one device runs")
    contexts = _ints(args.context, "--context", spec.max_context,
                     f"{spec.id}'s maximum context")  # fmt: skip
    for context in contexts:  # one line before anything runs: no encoder, or no room for text
        image_tokens(spec, args.images, context)
    layers = args.layers or spec.n_layers
    if not 1 <= layers <= spec.n_layers:
        raise RooflensError(f"--layers must be in 1..{spec.n_layers} ({spec.id}), got {layers}")
    dtype = args.dtype or DEFAULT_DTYPE[args.device]
    if dtype not in TORCH_DTYPES:
        raise RooflensError(f"--dtype must be one of {', '.join(TORCH_DTYPES)}, got '{dtype}'")
    torch = _torch(args.device)
    make_backend(args.impl, args.device)  # refuse --impl triton without a GPU before measuring
    root = Path(args.results)
    if args.device == "cpu":
        from rooflens.validate.cpu import load_cpu_spec, measure_cpu, save_cpu_spec, spec_path

        spec_root = root if args.stored_spec else root / "e2e"
        if not args.stored_spec:  # this session's roofs, on the clock the steps are timed with
            clock = time.thread_time if args.threads == 1 else time.perf_counter
            save_cpu_spec(measure_cpu(args.threads, quick=True, clock=clock), spec_root)
        load_cpu_spec(spec_root)
        torch.set_num_threads(args.threads)
        gpu_ref, profile, device_id, overhead = str(spec_path(spec_root)), "ideal", "cpu", 0.0
    else:
        from rooflens.validate.runner import gpu_preset_for

        gpu_ref = args.gpu or gpu_preset_for(torch.cuda.get_device_name())
        profile, device_id, overhead = "calibrated", gpu_ref, DEFAULT_OVERHEAD_BYTES
    setup = RunSetup(
        spec, gpu_ref, profile, dtype, EAGER_LAUNCH_S, args.device == "cuda", args.images
    )

    repeats = (args.repeats or 5, 4 * (args.repeats or 5))
    cfg = RunConfig(
        setup,
        args.device,
        batches,
        contexts,
        layers,
        _free_bytes(args.device),
        impl=args.impl,
        compile=args.compile,
        graph=not args.no_graph,
        repeats=repeats,
        overhead_bytes=overhead,
    )
    progress = None if args.json else _console().print
    rows: list[dict[str, Any]] = []  # filled scenario by scenario (run.py)
    try:
        run(cfg, progress, rows)
    except KeyboardInterrupt:  # Ctrl-C or a budget's SIGINT: keep the scenarios that finished
        if not rows:
            raise
        done = len({(r["batch"], r["context"]) for r in rows})
        print(f"interrupted: writing the {done} finished scenario(s) of "
              f"{len(batches) * len(contexts)}", file=sys.stderr)  # fmt: skip
        _output(args, rows, cfg, device_id, root)
        return 130
    _output(args, rows, cfg, device_id, root)
    return 0


def _console():  # type: ignore[no-untyped-def]
    from rich.console import Console

    return Console(width=130)


def _output(args: argparse.Namespace, rows: list, cfg, device_id: str, root: Path) -> None:  # type: ignore[no-untyped-def,type-arg]
    from rooflens.io.files import atomic_write_csv
    from rooflens.validate.e2e.report import (
        json_rows,
        median_step_error,
        results_frame,
        scenario_table,
    )
    from rooflens.validate.store import (
        PROVENANCE_COLUMNS,
        device_provenance,
        run_name,
        write_results,
    )

    s = cfg.setup
    meta = {
        "model": s.spec.id,
        "gpu": s.gpu_ref,
        "profile": s.profile,
        "impl": args.impl,
        "dtype": s.dtype,
        "layers_run": cfg.layers,
        "n_layers": s.spec.n_layers,
        "per_launch_s": s.per_launch_s,
    }
    frame = results_frame(rows, meta)
    provenance = device_provenance(args.device)
    path = write_results(frame, device_id, run_name("e2e"), provenance, root / "e2e")
    if args.output is not None:
        out = frame.assign(**{c: str(provenance.get(c, "unknown")) for c in PROVENANCE_COLUMNS})
        atomic_write_csv(args.output, out, "-o")
    if args.json:
        print(json.dumps(json_rows(rows), indent=2))
        return
    console = _console()
    depth = (
        f"{cfg.layers} of {s.spec.n_layers} layers, scaled"
        if cfg.layers < s.spec.n_layers
        else f"{s.spec.n_layers} layers"
    )
    ref = _shown(Path(s.gpu_ref)) if args.device == "cpu" else s.gpu_ref
    images = f" ({s.images} image(s) each)" if s.images else ""
    for batch in cfg.batches:
        for context in cfg.contexts:
            group = [r for r in rows if r["batch"] == batch and r["context"] == context]
            if not group:  # not measured: the run was interrupted first
                continue
            title = (
                f"{s.spec.id} · batch {batch}, context {context}{images} · {s.dtype}, {args.impl}, "
                f"decode {group[-1]['mode']} · {depth}"
            )
            console.print(scenario_table(group, title))
    console.print(
        f"measured on {provenance['device_name']}; predicted for {ref} ({s.profile} profile); "
        f"host cost per launch {s.per_launch_s * 1e6:.1f} µs (a tiny eager copy, timed here)\n"
        f"median |predicted / measured − 1| of TTFT and TPOT: {median_step_error(rows) * 100:.1f} %"
    )
    console.print(_dtype_note(s.spec, s.dtype))
    if not cfg.compile and (unfused := _unfused_note(s.spec)):
        console.print(unfused)
    console.print(f"wrote {_shown(path)}")


def _unfused_note(spec) -> str:  # type: ignore[no-untyped-def]
    """One line for an eager run: which operators plain torch runs as several kernels where an
    engine runs the one fused kernel the table prices (measured on an H200: RoPE 11-19x its
    price, a gated activation 2-5x; docs/validation.md, "Measured on a GPU"), or ''."""
    chains = []
    if spec.positional == "rope":
        chains.append("attn.rope as negate, cat, two multiplies and an add per tensor")
    if spec.gated_mlp:
        chains.append("the gated activation as the activation, then the product")
    if not chains:
        return ""
    return (f"eager torch runs {' and '.join(chains)}, where an engine runs one fused kernel "
            "each (what the prediction prices); --compile fuses them")  # fmt: skip


def _dtype_note(spec, dtype: str) -> str:  # type: ignore[no-untyped-def]
    """One line: the run and its prediction share --dtype, whatever the checkpoint ships in."""
    note = f"weights, experts, activations and KV cache in {dtype}, in the run and the prediction"
    native = {spec.native_weight_dtype, spec.native_expert_dtype or spec.native_weight_dtype}
    if native != {dtype}:
        shipped = " and ".join(sorted(native))
        note += f" (the released {spec.id} stores {shipped} weights: e2e runs {dtype} instead)"
    return note


def _shown(path: Path) -> str:
    """The path relative to the working directory when it lies below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def add_e2e_parser(vsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register `validate e2e` on the `validate` subcommand parser."""
    from rooflens.argtypes import whole
    from rooflens.validate.run_cli import THREADS
    from rooflens.validate.store import RESULTS_DIR

    e = vsub.add_parser("e2e", help="run the whole model here; check TTFT, TPOT and each op")
    e.add_argument("--model", required=True, help="preset id, rooflens spec file or config.json")
    e.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    e.add_argument("--gpu", help="GPU preset id (default: from the CUDA device name)")
    e.add_argument("--batch", default="1", help="comma-separated batch sizes (default 1)")
    e.add_argument("--context", default="1024", help="comma-separated prompt lengths, tokens")
    e.add_argument("--dtype", help="fp32, bf16 or fp16 (default bf16 on cuda, fp32 on cpu)")
    e.add_argument(
        "--images",
        type=whole(0, 1024),
        default=0,
        help="images per prompt (vision-language models); their tokens count in --context",
    )
    e.add_argument("--impl", default="torch", help="torch, or triton (kernels/, GPU only)")
    e.add_argument("--compile", action="store_true", help="torch.compile the forward")
    e.add_argument(
        "--no-graph",
        action="store_true",
        help="GPU: decode eagerly, not in a CUDA graph (shows a host-bound decode)",
    )
    e.add_argument(
        "--layers",
        type=whole(0),
        default=0,
        help="run N layers, scale per-layer time to the full depth",
    )
    e.add_argument("--repeats", type=whole(0, 10_000), default=0,
                   help="timed prefills (decode: 4x; default 5)")  # fmt: skip
    e.add_argument("--threads", type=THREADS, default=1, help="CPU threads (default 1)")
    e.add_argument(
        "--stored-spec",
        action="store_true",
        help="CPU: use the stored `calibrate cpu` spec instead of re-measuring",
    )
    e.add_argument("--json", action="store_true")
    e.add_argument("-o", "--output", help="also write the results CSV here")
    e.add_argument("--results", default=str(RESULTS_DIR), help="results store folder")
    e.set_defaults(handler=cmd_e2e)
