"""`lookahead:ngram=N,window=W,guesses=G,alpha=A`: lookahead decoding (Jacobi iteration with an
n-gram pool), self-drafting with no second model and no extra weights.

Mechanism (Fu et al. 2024, Break the Sequential Dependency of LLM Inference Using Lookahead
Decoding): each step runs one target forward over two branches at once: the lookahead branch
(W parallel Jacobi guesses over N − 1 future steps, W·(N − 1) tokens) that harvests n-grams into
a pool, and the verification branch (up to G candidate n-grams from the pool whose first token
matches, G·(N − 1) tokens). The step's width is T = 1 + (W + G)·(N − 1) tokens per sequence.

Formula. If each of a candidate's N − 1 tokens is right with probability α given the previous
ones were, and the G candidates are independent, the longest accepted prefix has
P(≥ j) = 1 − (1 − α^j)^G, so a step yields

    τ = 1 + Σ_{j=1..N−1} [1 − (1 − α^j)^G]

tokens (the expectation of a non-negative integer as the sum of its tail probabilities). The
step is priced with the roofline at T = 1 + (W + G)(N − 1): nearly free while memory-bound,
(W + G)(N − 1) + 1 times a decode step once compute-bound, so the gain vanishes with batch,
as the paper reports (its §5 targets batch 1).
Memory: no extra weights; the step's T positions are transient KV (counted per sequence).
Limits: candidates are not independent in practice, and α is an input (the paper measures
1.5–2.3 tokens per step on MT-Bench with LLaMA-2-chat; tune α to such a figure).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rooflens.model.ops.op import Num
from rooflens.model.optimizations._drafting import claim_decoding, price_verify, retime_with_timing
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.steps import Prediction, StepPricer, StepTiming
from rooflens.model.pricing.roofline import step_time_s

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario


def lookahead_tokens(alpha: Num, ngram: int, guesses: int) -> Num:
    """τ = 1 + Σ_{j=1..N−1} [1 − (1 − α^j)^G] (see module docstring)."""
    a = np.asarray(alpha, dtype=np.float64)
    total = np.ones_like(a)
    for j in range(1, ngram):
        total = total + 1.0 - (1.0 - a**j) ** guesses
    return float(total) if total.ndim == 0 else total


class Lookahead(Optimization):
    name = "lookahead"
    summary = "lookahead decoding: Jacobi n-gram guesses verified in the same step, no draft"
    citation = "Fu et al. 2024 (ICML), Break the Sequential Dependency of LLM Inference"
    order = 82
    params: ClassVar[dict[str, Param]] = {
        "ngram": Param(int, 5, "n-gram size (N); 1 = off", lo=1),
        "window": Param(int, 7, "lookahead window (W): parallel Jacobi guesses", lo=0),
        "guesses": Param(int, 7, "candidate n-grams verified per step (G)", lo=0),
        "alpha": Param(float, 0.2, "probability each guessed token is right (α), 0..1", lo=0, hi=1),
    }

    @property
    def width(self) -> int:
        return 1 + (self["window"] + self["guesses"]) * (self["ngram"] - 1)

    def scenario(self, sc: Scenario) -> Scenario:
        return claim_decoding(sc, self.name) if self.width > 1 else sc

    def kv_tokens_per_sequence(self, tokens: Num, sc: Scenario) -> Num:
        return tokens + self.width - 1

    def timing(self, t: StepTiming, sc: Scenario, pipeline: StepPricer) -> StepTiming:
        """The formula above on arrays: one step of 1 + (W + G)(N − 1) tokens, τ accepted."""
        if self.width == 1:
            return t
        verify = price_verify(pipeline, self.width, t.kv_lens, t.batch)
        return replace(
            t,
            decode_priced=verify,
            decode_step_s=step_time_s(verify),
            tokens_per_step=float(lookahead_tokens(self["alpha"], self["ngram"], self["guesses"])),
            rows_per_sequence=float(self.width),
        )

    def result(self, pred: Prediction, sc: Scenario, pipeline: StepPricer) -> Prediction:
        if self.width == 1:
            return pred
        return retime_with_timing(
            self,
            pred,
            sc,
            pipeline,
            lambda t, speedup: (
                f"lookahead: N={self['ngram']}, W={self['window']}, G={self['guesses']}, "
                f"α={self['alpha']:g}: {self.width} tokens per step, "
                f"{t.tokens_per_step:.2f} accepted, "
                f"decode speedup {speedup:.2f}x at batch {sc.workload.batch}"
            ),
        )
