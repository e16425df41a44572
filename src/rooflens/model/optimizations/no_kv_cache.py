"""`no-kv-cache`: switch the KV cache off, the naive baseline of autoregressive decoding.

Mechanism. Without a cache every forward step re-runs the whole sequence: a step that attends
over L positions feeds all L tokens (T = L), recomputing every layer's K and V, and nothing is
stored between steps. The naive generate loop (model(input_ids) once per token, Hugging Face
`use_cache=False`) also computes logits for every position, which `all_logits` keeps.

Formula (LLM inference book ch. 20.2.2, GPT-style MHA, FFN 4d, s = L_kv + 1 positions):
    FLOPs per step = (24·b·s·d² + 4·b·d·s²)·L + 2·b·s·d·V      (with a cache: s → 1 new token)
so the total over O generated tokens grows as Σ s² (quadratic), against Σ s with a cache. Here
the attention term counts causal pairs, 4·b·d·s(s+1)/2 per layer (the book counts the full s×s
product; a causal kernel skips the masked half). Bytes: the weights are read once per step as
with a cache, but the activations of all s rows move every step, and no KV cache is read or
written (K and V are consumed straight from the QKV projection's output).

Memory: no KV cache is held. Without a cache a sequence cannot be prefilled in chunks (a later
chunk needs the earlier chunks' K/V), so activations are sized for the whole B·P tokens.

Limits: the decode step's activations at P + O − 1 positions are taken as the prompt's (the
prefill step sizes activation memory). Sliding windows still cap attention but not recompute.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from rooflens.model.ops.op import Num, Op
from rooflens.model.ops.table import build_ops
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.steps import Step

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario


class NoKVCache(Optimization):
    name = "no-kv-cache"
    summary = "switch the KV cache off: every step recomputes K/V for the whole sequence"
    citation = "LLM inference book ch. 20.2.2 (FLOPs with and without KV cache)"
    order = 5  # rebuilds the table: must run before every other table transform
    switches_off: ClassVar[str] = "KV cache"
    params: ClassVar[dict[str, Param]] = {
        "all_logits": Param(bool, True, "compute logits for every position (naive loop)"),
    }

    def scenario(self, sc: Scenario) -> Scenario:
        workload = sc.workload.model_copy(update={"prefill_chunk_tokens": 0})
        return sc.model_copy(update={"workload": workload})

    def ops(self, ops: list[Op], sc: Scenario, step: Step) -> list[Op]:
        lm_tokens = step.L if self["all_logits"] else step.lm_tokens
        rebuilt = build_ops(sc, step.phase, step.B, step.L, step.L, lm_tokens)
        return [_without_cache(op) for op in rebuilt]

    def kv_tokens_per_sequence(self, tokens: Num, sc: Scenario) -> Num:
        return 0.0 * tokens


def _without_cache(op: Op) -> Op:
    """Attention reads fresh K/V as activations, not from a cache.

    Both attention paths already count the fresh K/V rows (MLA: the latent rows of kv_a_proj's
    output) in act_bytes, so only the cache traffic goes.
    """
    if op.kind != "attention":
        return op
    return replace(op, kv_bytes=0.0 * op.kv_bytes)
