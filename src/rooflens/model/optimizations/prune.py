"""`prune:heads=H,ffn=F`: structured pruning as a model swap to a smaller derived spec.

Mechanism (Michel et al. 2019, "Are Sixteen Heads Really Better than One?"; Ma et al. 2023,
LLM-Pruner; Xia et al. 2024, Sheared LLaMA): remove whole attention heads and whole MLP
intermediate channels, so the pruned model is a plain dense model with fewer heads and a
narrower MLP, and every cost follows from the smaller shapes (no sparse kernels needed).

Formulas (fractions removed, rounded to whole units):
- heads: MHA keeps H' = K' = round(H·(1 − h)); GQA removes whole query groups, keeping the
  group size: K' = max(1, round(K·(1 − h))), H' = K'·H/K (so the KV cache shrinks too); MQA and
  MLA keep their one shared KV and H' = round(H·(1 − h)) query heads. d_model and head_dim stay
  (the residual stream is not pruned), so q/o projections shrink to H'·Dh.
- ffn: F' = round(F·(1 − f)) for the dense MLP and for every expert.
The derived spec must still split over the TP degree (heads) and the result says how many
parameters the pruning removed. heads = ffn = 0 is the identity. Limits: accuracy is not
modelled; pruning is uniform across layers (LLM-Pruner and Sheared LLaMA vary it per layer).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from rooflens.model.optimizations._swap import with_model
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.scenario import with_applied
from rooflens.model.predict.steps import Prediction, StepPricer
from rooflens.model.specs.params import count_params
from rooflens.model.specs.spec import ModelSpec

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario


def pruned_spec(spec: ModelSpec, heads: float, ffn: float) -> ModelSpec:
    """The spec with a share `heads` of attention heads and `ffn` of MLP channels removed."""
    H, K = spec.n_heads, spec.n_kv_heads
    keep = 1.0 - heads
    if spec.attention == "gqa":
        K2 = max(1, round(K * keep))
        H2 = K2 * (H // K)
    elif spec.attention == "mha":
        H2 = K2 = max(1, round(H * keep))
    else:  # mqa, mla: one shared KV
        H2, K2 = max(1, round(H * keep)), K
    attention = spec.attention
    if attention in ("mha", "gqa"):
        attention = "mha" if K2 == H2 else ("mqa" if K2 == 1 else "gqa")
    update = {
        "id": f"{spec.id}-pruned",
        "name": f"{spec.name} (pruned: heads −{heads:.0%}, ffn −{ffn:.0%})",
        "n_heads": H2,
        "n_kv_heads": K2,
        "attention": attention,
        "d_ff": max(1, round(spec.d_ff * (1.0 - ffn))),
        "d_ff_expert": round(spec.d_ff_expert * (1.0 - ffn)),
    }
    # model_copy skips the spec validators on purpose: head_dim·H' ≠ d_model after pruning.
    return spec.model_copy(update=update, checked=False)


class Prune(Optimization):
    name = "prune"
    summary = "structured pruning: remove a share of attention heads and MLP channels"
    citation = "Michel et al. 2019; Ma et al. 2023 LLM-Pruner; Xia et al. 2024 Sheared LLaMA"
    order = 8  # spec transform, before table transforms
    params: ClassVar[dict[str, Param]] = {
        "heads": Param(
            float, 0.0, "share of attention heads removed, 0..1", lo=0, hi=1, hi_open=True
        ),
        "ffn": Param(
            float, 0.0, "share of MLP intermediate channels removed, 0..1", lo=0, hi=1, hi_open=True
        ),
    }

    def scenario(self, sc: Scenario) -> Scenario:
        if not (self["heads"] or self["ffn"]):
            return sc
        spec = pruned_spec(sc.model, self["heads"], self["ffn"])
        new = with_model(sc, spec, "pruned model", check_spec=False)
        original = count_params(sc.model).total
        return with_applied(new, prune_from_params=original)

    def result(self, pred: Prediction, sc: Scenario, pipeline: StepPricer) -> Prediction:
        before = sc.applied.prune_from_params
        if not before:
            return pred
        after = count_params(sc.model).total
        m = sc.model
        note = (
            f"prune: {m.n_heads} heads ({m.n_kv_heads} KV), d_ff {m.d_ff}; {before / 1e9:.2f} B "
            f"→ {after / 1e9:.2f} B parameters ({1 - after / before:.0%} fewer)"
        )
        return replace(pred, notes=[*pred.notes, note])
