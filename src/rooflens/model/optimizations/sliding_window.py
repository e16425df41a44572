"""`sliding-window:window=W[,sinks=S]`: attention over the last W positions (plus S attention
sinks), so KV memory and attention cost stop growing with the sequence.

Mechanism. Each query attends the W most recent positions (Beltagy et al. 2020, Longformer;
Mistral 7B uses W = 4096) and, with StreamingLLM (Xiao et al. 2024, "Efficient Streaming
Language Models with Attention Sinks"), also the first S tokens, which absorb attention mass and
keep quality once the window slides. The cache keeps only those W + S positions (a ring buffer).

Formulas: a query at position p attends min(p, W + S) keys (the S sinks and the last W overlap
while p ≤ W + S), so the table's windowed causal sum applies with window W + S
(model/ops/table.py attended_keys: Σ min(p, W+S)); a decode step reads min(L, W + S) cached
positions
and a step of T new tokens the union of their windows, min(L, T + W + S − 1) (kv_positions);
a sequence holds min(P + O − 1, W + S) positions (model/predict/memory.py).

Limits: a what-if on cost; a model not trained with a window loses quality unless sinks are kept
(StreamingLLM) and even then long-range recall is lost. Prefill of a prompt longer than W still
computes the full projections; only attention is capped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.scenario import with_applied

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario
    from rooflens.model.specs.spec import ModelSpec

STREAMING_ASSUMPTION = (
    "{model} is run past its {max:,}-token context ({context:,} positions) with a sliding "
    "window of {span:,}: assumed, as StreamingLLM (Xiao et al. 2024) does, that the cache is "
    "re-indexed so positions never exceed the window and that quality holds with attention "
    "sinks (sinks={sinks}; 4 recommended); tokens older than the window are forgotten, so "
    "long-range recall is lost"
)


def streaming_spec(
    spec: ModelSpec, opts: Sequence[Optimization], context_tokens: int
) -> tuple[ModelSpec, str]:
    """(the spec, '') or, when a sliding window is on and the sequence outgrows the model's max
    context, a spec whose max context admits it, with the quality assumption that carries (the
    point of StreamingLLM: a fixed-size cache over an unbounded stream)."""
    window = next((o for o in opts if isinstance(o, SlidingWindow)), None)
    if window is None or not window["window"] or context_tokens <= spec.max_context:
        return spec, ""
    span = window["window"] + window["sinks"]
    note = STREAMING_ASSUMPTION.format(
        model=spec.id, max=spec.max_context, context=context_tokens, span=span,
        sinks=window["sinks"],
    )  # fmt: skip
    return spec.model_copy(update={"max_context": context_tokens}), note


class SlidingWindow(Optimization):
    name = "sliding-window"
    summary = "attend the last W positions (+ S sink tokens): KV and attention stop growing"
    citation = "Beltagy et al. 2020 Longformer; Xiao et al. 2024 StreamingLLM (sinks)"
    order = 14  # spec transform
    params: ClassVar[dict[str, Param]] = {
        "window": Param(int, 4096, "recent positions attended, W (0 = off)", lo=0),
        "sinks": Param(int, 0, "first tokens always attended, S (StreamingLLM uses 4)", lo=0),
    }

    def check(self) -> None:
        if self["sinks"] and not self["window"]:
            raise RooflensError("--opt sliding-window: sinks need a window > 0")

    def scenario(self, sc: Scenario) -> Scenario:
        span = self["window"] + self["sinks"]
        if not span:
            return sc
        if span > sc.model.max_context:
            raise RooflensError(
                f"--opt sliding-window: window + sinks = {span} exceeds {sc.model.id}'s "
                f"max context {sc.model.max_context}"
            )
        model = sc.model.with_window(span)  # every layer, full ones included
        return with_applied(sc.model_copy(update={"model": model}), kv_window_tokens=span)
