"""`speculative:draft=MODEL,gamma=G,alpha=A`: speculative decoding with a small draft model.

Mechanism (Leviathan et al. 2023; Chen et al. 2023): per iteration the draft model proposes γ
tokens autoregressively (γ draft decode steps), then the target scores all γ + 1 positions in one
forward step and keeps the longest accepted prefix plus one token of its own, so the output
distribution is exactly the target's.

Formula. With each draft token accepted with probability α, an iteration yields
τ = (1 − α^(γ+1)) / (1 − α) tokens (anchors E10). Unlike the closed-form speedup
τ / (γ·c + 1), which fixes the draft/target cost ratio c and assumes verification costs one
target step, both costs are priced here with the roofline:

    iteration(L) = γ · draft_step(B, L + (γ − 1)/2) + target_step(B, T = γ + 1, L + γ)
    TPOT = mean over decode positions of iteration(L) / τ

(the draft's steps are priced at their mean position: each op's time is linear in L). At small
batch the target step is memory-bound and verifying γ + 1 tokens costs about one step; as the
batch grows it turns compute-bound, costs up to γ + 1 steps, and the speedup falls below 1.

Memory: the draft's weights (extra_bytes) and its KV cache, which holds the same positions as
the target's; both caches also hold the γ speculative positions. The draft's cache is counted in
target-token equivalents in kv_cache_bytes, so `max_batch` accounts for it.
TTFT: the draft also prefills the prompt.

Limits: α is an input (it depends on the pair of models and the text); the draft runs with
`draft_tp` (default: the target's TP) and the target's optimizations a draft inherits (a
sliding window, quantization, attention kernels, KV layout: `_drafting.DRAFT_INHERITS`);
pipeline parallelism is not re-timed under speculation; tree drafts are not modelled (see `medusa`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rooflens.hardware.errors import RooflensError
from rooflens.model.ops.op import Num
from rooflens.model.optimizations._drafting import (
    claim_decoding,
    draft_pipeline,
    expected_tokens,
    price_verify,
    retime_with_timing,
)
from rooflens.model.optimizations._swap import side_scenario
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.memory import kv_bytes_per_token, weights_bytes_per_gpu
from rooflens.model.predict.steps import MemoryBreakdown, Prediction, Step, StepPricer, StepTiming
from rooflens.model.pricing.roofline import price_ops, step_time_s
from rooflens.model.specs.params import count_params
from rooflens.model.specs.presets import get_model, model_ids

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario
    from rooflens.model.specs.spec import ModelSpec

# Families that share a tokenizer under different names (Mixtral reuses Mistral's).
TOKENIZER_LINEAGE = {"mixtral": "mistral"}


def draft_problem(target: ModelSpec, draft: ModelSpec) -> str | None:
    """Why `draft` cannot draft for `target`, in the words the CLI and the dashboard both show;
    None when it can. A draft must share the target's tokenizer (same family lineage and
    vocabulary size: engines such as vLLM refuse another vocabulary) and be smaller (a larger
    draft makes every iteration slower than plain decoding)."""
    problems = []
    lineage = TOKENIZER_LINEAGE.get(target.family, target.family)
    if TOKENIZER_LINEAGE.get(draft.family, draft.family) != lineage or (
        draft.vocab_size != target.vocab_size
    ):
        problems.append(
            f"another tokenizer ({draft.family}, {draft.vocab_size:,} tokens; the target's: "
            f"{target.family}, {target.vocab_size:,})"
        )
    draft_params, target_params = count_params(draft).total, count_params(target).total
    if draft_params >= target_params:
        problems.append(
            f"not smaller ({draft_params / 1e9:.1f} B parameters against "
            f"{target_params / 1e9:.1f} B)"
        )
    if not problems:
        return None
    return f"{draft.id} cannot draft for {target.id}: {' and '.join(problems)}"


def draft_candidates(target: ModelSpec) -> list[str]:
    """Presets that can draft for `target` (`draft_problem` finds none). Cheapest first: fewest
    parameters, then the longest context (a draft must hold the target's context), then id."""
    found = []
    for preset in model_ids():
        spec = get_model(preset)
        if spec.id != target.id and draft_problem(target, spec) is None:
            found.append((count_params(spec).total, -spec.max_context, preset))
    return [preset for _, _, preset in sorted(found)]


def no_draft_text(target: ModelSpec) -> str:
    """What the CLI and the dashboard say when no preset can draft for `target`."""
    return f"no preset shares {target.id}'s tokenizer and is smaller, so none can draft for it"


def default_draft(target: ModelSpec) -> str | None:
    """The family's smallest preset that holds the target's context (else the smallest); None
    when no preset shares the target's tokenizer."""
    candidates = draft_candidates(target)
    long_enough = [c for c in candidates if get_model(c).max_context >= target.max_context]
    choices = long_enough or candidates
    return choices[0] if choices else None


class Speculative(Optimization):
    name = "speculative"
    summary = "speculative decoding: a draft model proposes γ tokens, the target verifies them"
    citation = (
        "Leviathan et al. 2023 (ICML), Fast Inference from Transformers via Speculative Decoding"
    )
    order = 80  # changes the step structure: after every table transform
    params: ClassVar[dict[str, Param]] = {
        "draft": Param(
            str,
            "",
            "draft model: preset id or spec file (default: the smallest preset sharing "
            "the target's tokenizer)",
            preset="model",
        ),
        "gamma": Param(int, 4, "tokens the draft proposes per iteration (γ)", lo=1),
        "alpha": Param(
            float, 0.8, "probability each draft token is accepted (α), 0..1", lo=0, hi=1
        ),
        "draft_tp": Param(int, 0, "tensor parallelism of the draft (0 = the target's)", lo=0),
    }

    @property
    def active(self) -> bool:
        return self["gamma"] > 0

    def draft_spec(self, target: ModelSpec) -> ModelSpec:
        """The draft model: the one given, else the target family's smallest (`default_draft`)."""
        if self["draft"]:
            draft = get_model(self["draft"])
            problem = draft_problem(target, draft)
            if problem:
                fits = ", ".join(draft_candidates(target)[:3]) or "none among the presets"
                raise RooflensError(f"--opt speculative: {problem}; drafts that can: {fits}")
            return draft
        found = default_draft(target)
        if found is None:
            raise RooflensError(
                f"--opt speculative: {no_draft_text(target)}; give a draft with draft=MODEL "
                "(a preset id or a spec file), or use medusa or lookahead, which need no draft"
            )
        return get_model(found)

    def draft_scenario(self, sc: Scenario) -> Scenario:
        tp = self["draft_tp"] or sc.parallel.tp
        spec = self.draft_spec(sc.model)
        if sc.applied.kv_window_tokens and sc.context_tokens > spec.max_context:
            # a windowed (StreamingLLM) target runs past its context; its draft, under the
            # same window, does too (sliding_window.streaming_spec states the assumption)
            spec = spec.model_copy(update={"max_context": sc.context_tokens})
        return side_scenario(sc, spec, tp, "speculative draft")

    def scenario(self, sc: Scenario) -> Scenario:
        return claim_decoding(sc, self.name) if self.active else sc

    def kv_tokens_per_sequence(self, tokens: Num, sc: Scenario) -> Num:
        if not self.active:
            return tokens
        held = tokens + self["gamma"]
        draft_per_token = kv_bytes_per_token(self.draft_scenario(sc))
        return held * (1.0 + draft_per_token / kv_bytes_per_token(sc))

    def memory(self, mem: MemoryBreakdown, sc: Scenario) -> MemoryBreakdown:
        if not self.active:
            return mem
        draft_weights = weights_bytes_per_gpu(self.draft_scenario(sc))
        return replace(mem, extra_bytes=mem.extra_bytes + draft_weights)

    def timing(self, t: StepTiming, sc: Scenario, pipeline: StepPricer) -> StepTiming:
        """The formula above on arrays: γ draft steps + one verify step of γ + 1 tokens per
        iteration, τ tokens per iteration, the draft's prefill added to TTFT."""
        if not self.active:
            return t

        gamma, alpha = self["gamma"], self["alpha"]
        draft = draft_pipeline(pipeline, self.draft_scenario(sc))
        draft_ops = draft.step_ops(Step("draft", t.batch, 1.0, t.kv_lens + (gamma - 1) / 2.0))
        draft_ops = [replace(op, count=op.count * gamma) for op in draft_ops]
        drafted = price_ops(draft_ops, draft.scenario.system, draft.profile)
        verify = price_verify(pipeline, gamma + 1, t.kv_lens, t.batch)
        prompt = t.prompt_tokens
        draft_prefill = draft.price_step(Step("prefill", t.prefill_batch, prompt, prompt))
        return replace(
            t,
            decode_priced=verify + drafted,
            decode_step_s=step_time_s(drafted) + step_time_s(verify),
            tokens_per_step=float(expected_tokens(alpha, gamma)),
            rows_per_sequence=float(gamma + 1),
            prefill_s=t.prefill_s + step_time_s(draft_prefill),
        )

    def result(self, pred: Prediction, sc: Scenario, pipeline: StepPricer) -> Prediction:
        if not self.active:
            return pred
        gamma, alpha, w = self["gamma"], self["alpha"], sc.workload
        plain_s = pred.decode.time_s or float("nan")  # no decode step when O = 1

        def describe(t: StepTiming, speedup: float) -> str:
            drafted = [p for p in t.decode_priced if p.op.phase == "draft"]
            cost_ratio = float(np.mean(step_time_s(drafted))) / gamma / plain_s
            slower = " (slower than plain decoding: speculation does not pay here)"
            return (
                f"speculative: draft {self.draft_spec(sc.model).id}, γ={gamma}, α={alpha:g}: "
                f"{t.tokens_per_step:.2f} tokens per target step, draft/target step cost "
                f"c={cost_ratio:.3f}, decode speedup {speedup:.2f}x over plain decoding at "
                f"batch {w.batch}" + (slower if speedup < 1 else "")
            )

        return retime_with_timing(self, pred, sc, pipeline, describe)
