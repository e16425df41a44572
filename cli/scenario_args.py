"""The options that describe one scenario (model, GPU, workload, precision, parallelism,
optimizations), shared by `memory`, `predict` and `compare`, and the Scenario they build through
`model.api.make_scenario`. A new scenario option is added here, once, for all three."""

from __future__ import annotations

import argparse
from typing import Any

from argtypes import count, non_negative, non_negative_number
from model.api import make_scenario
from model.dtypes import ACTIVATION_DTYPES, STORAGE_DTYPES


def add_scenario_args(p: argparse.ArgumentParser, memory_only: bool = False) -> None:
    """The scenario's options; `memory` takes one --context in place of the workload's."""
    p.add_argument("--model", required=True, help="preset id, spec file or HF config.json")
    p.add_argument("--gpu", required=True, help="GPU or system preset id, or a JSON/YAML spec")
    p.add_argument("--batch", type=count, default=1, help="concurrent sequences (default 1)")
    if memory_only:
        p.add_argument("--context", type=count, default=2048, help="tokens held per sequence")
    else:
        p.add_argument("--prompt-len", type=count, default=512, help="prompt tokens (default 512)")
        p.add_argument("--output-len", type=count, default=128, help="output tokens (default 128)")
        p.add_argument(
            "--images",
            type=count,
            default=0,
            help="images per prompt (vision-language models): their tokens join the prompt",
        )
        p.add_argument(
            "--act-dtype",
            default=None,
            choices=ACTIVATION_DTYPES,
            help="default: fp8 with fp8 weights on GPUs with fp8 units, else bf16",
        )
        p.add_argument("--profile", default="ideal", choices=("ideal", "calibrated"))
    p.add_argument(
        "--weight-dtype",
        default=None,
        choices=STORAGE_DTYPES,
        help="default: the model's native dtype (bf16; fp8 for DeepSeek-V3)",
    )
    p.add_argument("--kv-dtype", default=None, choices=STORAGE_DTYPES, help="default: activations")
    p.add_argument("--group-size", type=count, default=128, help="quantization group (default 128)")
    p.add_argument("--tp", type=count, default=1, help="tensor-parallel GPUs (default 1)")
    p.add_argument("--pp", type=count, default=1, help="pipeline-parallel stages (default 1)")
    p.add_argument("--ep", type=count, default=1, help="expert-parallel degree (default 1)")
    p.add_argument(
        "--opt",
        action="append",
        default=[],
        metavar="NAME[:k=v,...]",
        help="an optimization (repeatable); see `rooflens list optimizations`",
    )
    p.add_argument(
        "--overhead-gb", type=non_negative_number, default=None, help="runtime overhead, GB"
    )
    p.add_argument(
        "--prefill-chunk",
        type=non_negative,
        default=8192,
        help="tokens prefilled at once; sizes activation memory (default 8192, 0 = no chunking)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def scenario_from_args(args: argparse.Namespace, memory_only: bool = False) -> Any:
    """The Scenario the options of `add_scenario_args` describe (model/api.py checks them)."""
    extra: dict[str, Any] = {"prefill_chunk_tokens": args.prefill_chunk}
    if args.overhead_gb is not None:
        extra["overhead_bytes"] = args.overhead_gb * 1e9
    if memory_only:
        extra.update(prompt_len=args.context, output_len=1)
    else:
        extra.update(
            prompt_len=args.prompt_len,
            output_len=args.output_len,
            images=args.images,
            act_dtype=args.act_dtype,
            profile=args.profile,
        )
    return make_scenario(
        args.model,
        args.gpu,
        batch=args.batch,
        weight_dtype=args.weight_dtype,
        kv_dtype=args.kv_dtype,
        group_size=args.group_size,
        tp=args.tp,
        pp=args.pp,
        ep=args.ep,
        **extra,
    )
