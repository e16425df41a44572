"""`medusa:heads=H,alpha=A,tree=W`: self-drafting with extra decoding heads (Medusa).

Mechanism (Cai et al. 2024, Medusa): H extra heads on the target's last hidden state each guess
one more future token (head i the token i + 1 ahead); the guesses, arranged as a tree of W
candidate tokens, are verified in the next target step with tree attention. No second model:
each head is one residual block (a D×D linear with bias and SiLU) and its own D×V vocabulary
projection (Medusa-1 `medusa_head`), so the extra weights are H·(D² + D + V·D).

Formula. Head i's guess is accepted with probability α given the previous ones were, so a step
yields τ = (1 − α^(H+1)) / (1 − α) tokens (the chain case of Leviathan et al.'s E10 with γ = H;
a wider tree raises the effective α, which is the input). Each step costs one target step over
T = W tokens (W = H + 1 for a single chain; Medusa's default trees use ~64) plus the heads on
the B last-position rows, both priced with the roofline:

    TPOT = mean over positions of [target_step(B, T = W, L + W − 1) + heads(B)] / τ

Memory: the heads' weights (16-bit, vocabulary projection split by TP); W transient KV
positions per sequence.
Limits: α is an input; tree attention's mask is priced as causal attention over the W tokens.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from rooflens.hardware.errors import RooflensError
from rooflens.model.ops.op import Num, Op, gemm_op
from rooflens.model.optimizations._drafting import (
    claim_decoding,
    expected_tokens,
    price_verify,
    retime_with_timing,
)
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.steps import MemoryBreakdown, Prediction, StepPricer, StepTiming
from rooflens.model.pricing.roofline import price_ops, step_time_s

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario

HEAD_DTYPE = "bf16"  # heads are trained and served in 16-bit (Medusa repository)


class Medusa(Optimization):
    name = "medusa"
    summary = "Medusa: extra decoding heads guess H tokens, verified by one tree step"
    citation = "Cai et al. 2024 (ICML), Medusa: Simple LLM Inference Acceleration Framework"
    order = 81
    params: ClassVar[dict[str, Param]] = {
        "heads": Param(int, 4, "extra decoding heads (H); 0 = off", lo=0),
        "alpha": Param(
            float, 0.6, "acceptance probability of each head's guess (α), 0..1", lo=0, hi=1
        ),
        "tree": Param(
            int, 0, "candidate tokens verified per step (W); 0 = H + 1 (one chain)", lo=0
        ),
    }

    def check(self) -> None:
        if self["heads"] and self["tree"] and self["tree"] < self["heads"] + 1:
            raise RooflensError("--opt medusa: tree must hold at least heads + 1 tokens")

    @property
    def width(self) -> int:
        return self["tree"] or self["heads"] + 1

    def head_ops(self, sc: Scenario, B: Num) -> list[Op]:
        """The H heads on B rows: residual block (replicated) and vocab projection (TP-split)."""
        m, H, act = sc.model, self["heads"], sc.precision.act_dtype
        return [
            gemm_op("medusa.resblock", "decode", H, B, m.d_model, m.d_model, HEAD_DTYPE, act),
            gemm_op(
                "medusa.lm_head", "decode", H, B, m.vocab_size / sc.parallel.tp, m.d_model,
                HEAD_DTYPE, act,
            ),
        ]  # fmt: skip

    def scenario(self, sc: Scenario) -> Scenario:
        return claim_decoding(sc, self.name) if self["heads"] else sc

    def kv_tokens_per_sequence(self, tokens: Num, sc: Scenario) -> Num:
        return tokens + self.width - 1 if self["heads"] else tokens

    def memory(self, mem: MemoryBreakdown, sc: Scenario) -> MemoryBreakdown:
        if not self["heads"]:
            return mem
        D, V, tp = sc.model.d_model, sc.model.vocab_size, sc.parallel.tp
        head_bytes = self["heads"] * (D * D + D + V * D / tp) * 2.0
        return replace(mem, extra_bytes=mem.extra_bytes + head_bytes)

    def timing(self, t: StepTiming, sc: Scenario, pipeline: StepPricer) -> StepTiming:
        """The formula above on arrays: one verify step of W tokens plus the heads, τ tokens."""
        if not self["heads"]:
            return t
        verify = price_verify(pipeline, self.width, t.kv_lens, t.batch)
        heads = price_ops(self.head_ops(sc, t.batch), sc.system, pipeline.profile)
        return replace(
            t,
            decode_priced=verify + heads,
            decode_step_s=step_time_s(verify) + step_time_s(heads),
            tokens_per_step=float(expected_tokens(self["alpha"], self["heads"])),
            rows_per_sequence=float(self.width),
        )

    def result(self, pred: Prediction, sc: Scenario, pipeline: StepPricer) -> Prediction:
        if not self["heads"]:
            return pred
        return retime_with_timing(
            self,
            pred,
            sc,
            pipeline,
            lambda t, speedup: (
                f"medusa: {self['heads']} heads, α={self['alpha']:g}, {self.width} tokens "
                f"verified per step: {t.tokens_per_step:.2f} tokens per step, decode speedup "
                f"{speedup:.2f}x at batch {sc.workload.batch}"
            ),
        )
