"""One `validate e2e` run: build the decoder, measure every (batch, context), join with the
prediction, and return rows `{phase, batch, context, predicted_s, measured_s, ops}`.

`--layers N` runs N of the model's L layers. Operators repeated per layer are scaled by L / N,
`embed`, `norm.final` and `lm_head` are kept whole, and what no operator accounts for (Python,
gaps, launches) is scaled with the attributed time it sits between:

    full = whole + (L/N)·layer + rest · (whole + (L/N)·layer) / (whole + layer)

so a 70B-class model is checked on one GPU by running a few of its layers at full width. A model
whose layers differ in kind (sliding and full attention) runs them in proportion
(validate/e2e/layout.py), and a vision-language model's encoder (`--images`) runs whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from rooflens.model.pricing.host import HOST_OP
from rooflens.validate.e2e.decoder import Decoder
from rooflens.validate.e2e.measure import attribute, cuda_graph, measure_launch_s, time_step
from rooflens.validate.e2e.predict import (
    RunSetup,
    check_memory,
    image_tokens,
    is_whole,
    predict_phase,
    prefill_chunks,
)

UNATTRIBUTED = "unattributed"
TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass
class RunConfig:
    setup: RunSetup
    device: str  # "cuda" | "cpu"
    batches: list[int]
    contexts: list[int]
    layers: int  # layers actually run (≤ the spec's)
    free_bytes: float
    impl: str = "torch"
    compile: bool = False
    graph: bool = True  # capture the decode step in a CUDA graph (GPU; not MoE)
    repeats: tuple[int, int] = (5, 20)  # prefill, decode
    overhead_bytes: float = 0.0


def run(
    cfg: RunConfig,
    progress: Callable[[str], None] | None = None,
    rows: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Measure every scenario and return the rows; with `rows` given, each finished scenario's
    two rows are appended to it as they come, so a caller stopped midway keeps what was measured.
    """
    from rooflens.validate.e2e.backend import make_backend

    backend = make_backend(cfg.impl, cfg.device)
    rows = [] if rows is None else rows
    capacity = max(cfg.contexts) + 1
    where = "this GPU" if cfg.device == "cuda" else "this machine"
    for batch in cfg.batches:
        check_memory(
            cfg.setup, batch, capacity - 1, cfg.layers, cfg.free_bytes, where, cfg.overhead_bytes
        )
    for batch in cfg.batches:
        decoder = Decoder(
            cfg.setup.spec,
            n_layers=cfg.layers,
            batch=batch,
            capacity=capacity,
            dtype=TORCH_DTYPES[cfg.setup.dtype],
            device=cfg.device,
            backend=backend,
        ).init_weights()
        if not rows:  # the host's per-launch cost, once per run, on this decoder's layout
            per_launch_s, _ = measure_launch_s(decoder, cfg.device)
            cfg.setup = replace(cfg.setup, per_launch_s=per_launch_s)
        for context in cfg.contexts:
            if progress:
                progress(f"batch {batch}, context {context}: measuring")
            rows.extend(_scenario(cfg, decoder, batch, context))
        del decoder
        if cfg.device == "cuda":
            torch.cuda.empty_cache()
    return rows


def _scenario(cfg: RunConfig, decoder: Decoder, batch: int, context: int) -> list[dict[str, Any]]:
    V, device = cfg.setup.spec.vocab_size, cfg.device
    prompt = torch.randint(0, V, (batch, context), device=device)
    token = torch.randint(0, V, (batch, 1), device=device)
    pixels = None  # a VLM's images, whose tokens open each prompt (counted in `context`)
    vision = cfg.setup.spec.vision
    if image_tokens(cfg.setup.spec, cfg.setup.images, context) and vision is not None:
        side = vision.image_size
        shape = (batch, cfg.setup.images, vision.channels, side, side)
        pixels = torch.randn(shape, device=device, dtype=TORCH_DTYPES[cfg.setup.dtype])
    forward: Callable[..., torch.Tensor] = decoder
    if cfg.compile:
        # positions are Python ints: each (batch, context) step is its own specialisation
        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
        forward = torch.compile(decoder, dynamic=False)

    chunks, first = [], 0
    for size in prefill_chunks(batch, context):
        chunks.append(slice(first, first + size))
        first += size

    def prefill(model: Callable[..., torch.Tensor] = forward) -> None:
        for rows in chunks:
            model(prompt[rows], 0, rows=rows, pixels=None if pixels is None else pixels[rows])

    def decode() -> None:
        forward(token, context)

    eager_steps = {"prefill": lambda: prefill(decoder), "decode": lambda: decoder(token, context)}

    rows = []
    with torch.inference_mode():
        prefill()  # fills the cache the decode step reads
        # MoE experts take data-dependent token counts: no graph capture, eager decode
        graphed = cfg.graph and device == "cuda" and not cfg.setup.spec.is_moe
        decode_step = cuda_graph(decode) if graphed else decode
        plan = (
            ("prefill", prefill, cfg.repeats[0], False),
            ("decode", decode_step, cfg.repeats[1], graphed),
        )
        for phase, step, repeats, in_graph in plan:
            timing = time_step(step, device, repeats)
            eager = eager_steps[phase]  # profiled without graph or compiler: scopes intact
            # a graph or a compiled step issues its kernels without eager's per-op host work
            predicted = predict_phase(cfg.setup, phase, batch, context, in_graph or cfg.compile)
            names = [n for n in predicted.ops if n != HOST_OP]
            measured_ops = attribute(eager, decoder.scopes, device, names)
            row = _row(cfg, phase, batch, context, timing, predicted, measured_ops)
            row["mode"] = "compiled" if cfg.compile else ("cuda graph" if in_graph else "eager")
            rows.append(row)
    return rows


def _row(
    cfg: RunConfig,
    phase: str,
    batch: int,
    context: int,
    timing: Any,
    predicted: Any,
    measured_ops: dict[str, float],
) -> dict[str, Any]:
    factor = cfg.setup.spec.n_layers / cfg.layers
    whole = sum(s for n, s in measured_ops.items() if is_whole(n))
    layer = sum(s for n, s in measured_ops.items() if not is_whole(n))
    rest = max(0.0, timing.median_s - whole - layer)
    scale = (whole + factor * layer) / (whole + layer) if whole + layer > 0 else factor
    # compiled kernels fuse operators: only the totals compare, per operator the scopes do not
    per_op = not cfg.compile
    ops = [
        {
            "name": name,
            "predicted_s": predicted.ops[name],
            "measured_s": (measured_ops[name] * (1.0 if is_whole(name) else factor))
            if per_op
            else None,
        }
        for name in predicted.ops
        if name != HOST_OP
    ]
    ops.append(
        {
            "name": UNATTRIBUTED,
            "predicted_s": predicted.ops[HOST_OP],
            "measured_s": rest * scale if per_op else None,
        }
    )
    return {
        "phase": phase,
        "batch": batch,
        "context": context,
        "predicted_s": predicted.total_s,
        "measured_s": timing.median_s * scale,
        "measured_q20_s": timing.q20_s * scale,
        "measured_q80_s": timing.q80_s * scale,
        "launches": predicted.launches,
        "ops": ops,
    }
