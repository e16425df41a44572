"""`prompt-compression:ratio=R,compressor=MODEL`: LLMLingua-style prompt compression.

Mechanism (Jiang et al. 2023, LLMLingua; Pan et al. 2024, LLMLingua-2): a small language model
scores every prompt token (perplexity, or a token classifier) and drops the least informative,
keeping about 1/R of them; the target then prefills the shorter prompt. LLMLingua reports up to
20× compression with small quality loss on reasoning and in-context-learning prompts.

Formulas: the target sees P' = ceil(P / R) prompt tokens, so prefill work, TTFT and the KV cache
(P' + O − 1 positions per sequence) all shrink; decode attends over P' + i positions. If a
`compressor` model is named, its prefill over the full P tokens (logits at every position, as
perplexity scoring needs) is added to TTFT, priced with the roofline on the same GPUs.
R = 1 is the identity. Limits: R and quality are inputs; the compressor runs with no other
optimization and with the target's TP.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rooflens.model.ops.op import Num
from rooflens.model.optimizations._swap import side_scenario
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.scenario import with_applied
from rooflens.model.predict.steps import Prediction, Step, StepPricer, StepTiming, with_updates
from rooflens.model.pricing.roofline import step_time_s
from rooflens.model.specs.presets import get_model

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario


class PromptCompression(Optimization):
    name = "prompt-compression"
    summary = "LLMLingua prompt compression: prefill ~P/R tokens, shorter KV cache"
    citation = "Jiang et al. 2023 (EMNLP), LLMLingua: Compressing Prompts for Accelerated Inference"
    order = 6  # workload transform, before spec and table transforms
    params: ClassVar[dict[str, Param]] = {
        "ratio": Param(float, 1.0, "compression ratio R (prompt tokens in / out), ≥ 1", lo=1),
        "compressor": Param(
            str, "", "small LM that scores tokens (preset id); empty = free", preset="model"
        ),
    }

    def prompt_tokens(self, tokens: Num) -> Num:
        """P' = ceil(P / R), on arrays too."""
        if self["ratio"] == 1.0:
            return tokens
        out = np.ceil(np.asarray(tokens, dtype=np.float64) / self["ratio"])
        return float(out) if out.ndim == 0 else out

    def scenario(self, sc: Scenario) -> Scenario:
        if self["ratio"] == 1.0:
            return sc
        P = sc.workload.prompt_len
        workload = sc.workload.model_copy(update={"prompt_len": int(self.prompt_tokens(P))})
        compressed = sc.model_copy(update={"workload": workload})
        return with_applied(compressed, prompt_len_before_compression=P)

    def compressor_s(self, sc: Scenario, pipeline: StepPricer, batch: Num, prompt_in: Num) -> Num:
        """The compressor's prefill over the full prompts (logits at every position); 0 when
        no compressor is named."""
        if not self["compressor"]:
            return 0.0

        P = sc.applied.prompt_len_before_compression
        full = sc.model_copy(update={"workload": sc.workload.model_copy(update={"prompt_len": P})})
        small = side_scenario(full, get_model(self["compressor"]), sc.parallel.tp,
                              "prompt compressor")  # fmt: skip
        step = Step("prefill", batch, prompt_in, prompt_in, lm_tokens=prompt_in)
        return step_time_s(pipeline.for_scenario(small, ()).price_step(step))

    def timing(self, t: StepTiming, sc: Scenario, pipeline: StepPricer) -> StepTiming:
        """The compressor's prefill added to TTFT (the target's prefill is already of P')."""
        if self["ratio"] == 1.0 or not self["compressor"]:
            return t
        extra = self.compressor_s(sc, pipeline, t.prefill_batch, t.prompt_tokens_in)
        return replace(t, prefill_s=t.prefill_s + extra)

    def result(self, pred: Prediction, sc: Scenario, pipeline: StepPricer) -> Prediction:
        if self["ratio"] == 1.0:
            return pred

        P, P2 = sc.applied.prompt_len_before_compression, sc.workload.prompt_len
        note = f"prompt-compression: {P} → {P2} prompt tokens (R={self['ratio']:g})"
        extra_s = float(self.compressor_s(sc, pipeline, float(sc.workload.batch), float(P)))
        if self["compressor"]:
            spec = get_model(self["compressor"])
            note += f"; compressor {spec.id} scores {P} tokens in {extra_s * 1e3:.3g} ms"
        return with_updates(
            pred, ttft_s=pred.ttft_s + extra_s, e2e_s=pred.e2e_s + extra_s,
            notes=[*pred.notes, note],
        )  # fmt: skip
