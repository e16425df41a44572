"""`rooflens validate serve RESULT --model M --gpu G [...] [--fit] [--json]`: arguments and
printing; reading and replaying in validate/serve.py, the fit in validate/serve_fit.py."""

from __future__ import annotations

import argparse
import hashlib
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from rooflens.hardware.errors import RooflensError
from rooflens.io.files import atomic_write_text, check_writable, to_json
from rooflens.model.planner.step_costs import CurveCosts
from rooflens.model.specs.dtypes import STORAGE_DTYPES

DEFAULT_PROFILE = "serving-profile.yaml"
ROWS = (
    ("TTFT p50", "ttft_p50_s"),
    ("TTFT p99", "ttft_p99_s"),
    ("TPOT p50", "tpot_p50_s"),
    ("TPOT p99", "tpot_p99_s"),
    ("ITL p50", "itl_p50_s"),
    ("ITL p99", "itl_p99_s"),
    ("request throughput", "request_throughput_per_s"),
    ("output token throughput", "output_tokens_per_s"),
    ("total token throughput", "total_tokens_per_s"),
    ("goodput", "goodput_requests_per_s"),
    ("mean concurrency", "mean_concurrency"),
)


def add_serve_parser(vsub: Any) -> None:
    q = vsub.add_parser("serve", help="a vLLM/SGLang serving benchmark against the simulation")
    q.add_argument(
        "result", help="vllm bench serve --save-result JSON or SGLang bench_serving JSONL"
    )
    q.add_argument("--model", required=True, help="preset id or spec file")
    q.add_argument("--gpu", required=True, help="GPU preset id or spec file")
    q.add_argument("--tp", type=int, default=1, help="tensor-parallel GPUs (default 1)")
    q.add_argument("--pp", type=int, default=1, help="pipeline-parallel stages (default 1)")
    q.add_argument("--ep", type=int, default=1, help="expert-parallel degree (default 1)")
    q.add_argument("--weight-dtype", default="bf16", choices=STORAGE_DTYPES)
    q.add_argument("--kv-dtype", default="bf16", choices=STORAGE_DTYPES)
    q.add_argument("--opt", action="append", default=[], metavar="NAME[:k=v,...]")
    q.add_argument("--profile", default="calibrated", choices=("ideal", "calibrated"))
    q.add_argument(
        "--mode",
        default="chunked",
        choices=("chunked", "colocated"),
        help="the engine's scheduler (default chunked: vLLM V1, SGLang)",
    )
    q.add_argument(
        "--chunk",
        type=int,
        default=2048,
        help="max_num_batched_tokens / chunked_prefill_size (default 2048)",
    )
    q.add_argument(
        "--max-batch",
        type=int,
        default=256,
        help="the engine's max_num_seqs / max_running_requests (default 256)",
    )
    q.add_argument("--prefix-hit-rate", type=float, default=0.0,
                   help="share of prompt tokens served by the prefix cache, 0-1")  # fmt: skip
    q.add_argument("--ttft-slo", type=float, help="per-request TTFT target for goodput, s")
    q.add_argument("--tpot-slo", type=float, help="per-request TPOT target for goodput, s")
    q.add_argument("--fit", action="store_true", help="fit step overhead and batch cap")
    q.add_argument("--out", help=f"--fit: profile file to write (default {DEFAULT_PROFILE})")
    q.add_argument("--seed", type=int, default=0, help="arrival draws when no start times")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(handler=cmd_serve)


def _check(args: argparse.Namespace) -> None:
    for name in ("tp", "pp", "ep", "chunk", "max_batch"):
        if getattr(args, name) < 1:
            raise RooflensError(
                f"--{name.replace('_', '-')} must be ≥ 1, got {getattr(args, name)}"
            )
    if not 0 <= args.prefix_hit_rate < 1:
        raise RooflensError(f"--prefix-hit-rate must be in [0, 1), got {args.prefix_hit_rate}")
    if args.out is not None and not args.fit:
        raise RooflensError("--out names the profile --fit writes; add --fit, or drop --out")
    if args.fit:  # before the replay and the fit (a minute or more), not after them
        args.out = str(check_writable(DEFAULT_PROFILE if args.out is None else args.out, "--out"))
    if args.ep > args.tp:
        raise RooflensError(f"--ep {args.ep} > --tp {args.tp}: validate serve replays one "
                            "attention group; data-parallel attention is not replayed")  # fmt: skip
    for name in ("ttft_slo", "tpot_slo"):
        value = getattr(args, name)
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise RooflensError(f"--{name.replace('_', '-')} must be > 0 seconds, got {value}")


def cmd_serve(args: argparse.Namespace) -> int:
    from rooflens.validate.serve import arrivals, measured, predicted, read_result
    from rooflens.validate.serve_fit import (
        Deployment,
        deployment_curves,
        engine_cap,
        fit,
        profile_from_fit,
    )
    from rooflens.validate.store import git_commit

    _check(args)
    r = read_result(args.result)
    d = Deployment(
        args.model,
        args.gpu,
        args.tp,
        args.pp,
        args.ep,
        args.weight_dtype,
        args.kv_dtype,
        tuple(args.opt),
        args.profile,
        args.mode,
        args.chunk,
        args.max_batch,
        args.prefix_hit_rate,
    )
    c = deployment_curves(d, r.input_lens, r.output_lens)
    cap = engine_cap(c, d.max_batch)
    slos = (args.ttft_slo, args.tpot_slo)
    meas = measured(r, *slos)
    pred = predicted(CurveCosts(c), r, d.mode, cap, d.chunk_tokens, *slos, seed=args.seed)
    out: dict[str, Any] = {
        "engine": r.engine,
        "file": r.path,
        "requests": int(r.input_lens.size),
        "failed": r.n_failed,
        "chunked": r.n_chunked,
        "arrivals": arrivals(r, args.seed)[2],
        "batch_cap": cap,
        "slo": {"ttft_s": args.ttft_slo, "tpot_s": args.tpot_slo},
        "measured": meas,
        "predicted": pred,
        "fit": None,
    }
    if args.fit:
        f = fit(c, r, d, args.seed)
        fitted = predicted(
            CurveCosts(_with(c, f.step_overhead_s)),
            r,
            d.mode,
            f.max_batch,
            d.chunk_tokens,
            *slos,
            seed=args.seed,
        )
        provenance = {
            "source": Path(r.path).name,
            "sha256": _sha256(r.path),
            "format": r.engine,
            "requests": int(r.input_lens.size),
            "replays": f.replays,
            "rooflens_commit": git_commit(),
            "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        prof = profile_from_fit(f, r, d, pred, provenance)
        atomic_write_text(args.out, prof.to_yaml(), "--out")
        out["fit"] = {
            "step_overhead_s": f.step_overhead_s,
            "max_batch": f.max_batch,
            "predicted": fitted,
            "profile": str(args.out),
        }
    if args.json:  # a metric with no value (no output of two tokens: no TPOT) is null
        print(to_json(_nulls(out)))
    else:
        _print(out)
    return 0


def _nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _nulls(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _with(c: Any, h: float) -> Any:
    from rooflens.model.planner.serving_profile import with_step_overhead

    return with_step_overhead(c, h)


def _sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _fmt(key: str, value: float) -> str:
    from rooflens.io.units import fmt_time

    if not math.isfinite(value):
        return "—"
    if key.endswith("_s") and not key.endswith("_per_s"):
        return fmt_time(value)
    unit = {
        "request_throughput_per_s": "requests/s",
        "goodput_requests_per_s": "requests/s",
        "mean_concurrency": "requests",
    }.get(key, "tokens/s")
    return f"{value:,.3g} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def _print(out: dict[str, Any]) -> None:
    console = Console(width=140)
    fitted = out["fit"]["predicted"] if out["fit"] else None
    t = Table(
        title=f"{out['engine']} benchmark {Path(out['file']).name}: {out['requests']} "
        f"requests ({out['arrivals']}), measured vs simulated, batch cap "
        f"{out['batch_cap']}",
        title_justify="left",
        header_style="bold",
    )
    for name in ("metric", "measured", "predicted", "error"):
        t.add_column(name, justify="left" if name == "metric" else "right")
    if fitted:
        t.add_column("fitted", justify="right")
        t.add_column("error", justify="right")
    for label, key in ROWS:
        m, p = out["measured"][key], out["predicted"][key]
        cells = [label, _fmt(key, m), _fmt(key, p), _err(p, m)]
        if fitted:
            cells += [_fmt(key, fitted[key]), _err(fitted[key], m)]
        t.add_row(*cells)
    console.print(t)
    slo = out["slo"]
    if slo["ttft_s"] is None and slo["tpot_s"] is None:
        console.print("goodput: no --ttft-slo/--tpot-slo given, so every request counts")
    if out["failed"]:
        console.print(f"{out['failed']} failed requests left out of the replay")
    if out["chunked"]:
        console.print(
            f"{out['chunked']} requests have fewer inter-token latencies than output tokens "
            "− 1 (tokens streamed several at a time): ITLs count the chunks, TPOT the tokens"
        )
    if out["fit"]:
        f = out["fit"]
        console.print(
            f"fitted: {_fmt('x_s', f['step_overhead_s'])} host/scheduler overhead per "
            f"step, batch cap {f['max_batch']}; wrote {f['profile']} (use it with "
            "`rooflens plan --serving-profile`)"
        )


def _err(pred: float, meas: float) -> str:
    if not (math.isfinite(pred) and math.isfinite(meas)) or meas == 0:
        return "—"
    return f"{100 * (pred / meas - 1):+.1f} %"
