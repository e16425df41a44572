"""`gqa:kv_heads=N` and `mqa`: what-if conversion of a model's attention to N key/value heads
(grouped-query attention) or to one (multi-query attention).

Mechanism. The H query heads share K/V in N groups of H/N heads, so every K/V tensor shrinks by
K_old/N: the KV cache (bytes per token = layers · 2 · N · Dh · kv bytes), the decode attention's
cache reads, the K and V projection weights (D × N·Dh each) and their FLOPs. Query and output
projections and the attention FLOPs (per query head) are unchanged.

Formulas: the operator table and memory model are written in K (KV heads) throughout, so the
conversion is a spec change (n_kv_heads = N) and every count follows: QKV projection
2·B·T·D·(H + 2N)·Dh FLOPs, KV bytes per token 2·N·Dh·L·b (Ainslie et al. 2023, "GQA: Training
Generalized Multi-Query Transformer Models from Multi-Head Checkpoints"; Shazeer 2019, "Fast
Transformer Decoding: One Write-Head is All You Need").

Limits: a what-if on cost only; converting a trained MHA checkpoint needs uptraining (Ainslie
et al. report ~5% of the pre-training compute) and quality is not modelled. Not for MLA models,
whose cache is a latent, not per-head K/V. N must divide H; with tensor parallelism N and the TP
degree must divide one another (KV heads are split or replicated).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import ValidationError

from rooflens.hardware.errors import RooflensError, validation_message
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.specs.spec import ModelSpec

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario


def with_kv_heads(sc: Scenario, kv_heads: int, what: str) -> Scenario:
    """The scenario with its model converted to `kv_heads` KV heads, validated."""
    m = sc.model
    if m.attention == "mla":
        raise RooflensError(f"--opt {what}: {m.id} uses MLA (a latent KV cache), not KV heads")
    if kv_heads == m.n_kv_heads:
        return sc
    if kv_heads > m.n_heads or m.n_heads % kv_heads:
        raise RooflensError(
            f"--opt {what}: kv_heads={kv_heads} must divide {m.id}'s {m.n_heads} query heads"
        )
    kind = "mha" if kv_heads == m.n_heads else ("mqa" if kv_heads == 1 else "gqa")
    try:
        spec = ModelSpec.model_validate(
            {**m.model_dump(), "n_kv_heads": kv_heads, "attention": kind}
        )
        return type(sc).model_validate({**dict(sc), "model": spec})
    except ValidationError as exc:
        raise RooflensError(validation_message(exc, f"--opt {what}")) from None


class GQA(Optimization):
    name = "gqa"
    summary = "grouped-query attention: N KV heads shared by groups of query heads"
    citation = "Ainslie et al. 2023, GQA (arXiv:2305.13245)"
    order = 10  # spec transform
    params: ClassVar[dict[str, Param]] = {
        "kv_heads": Param(int, 8, "KV heads N (must divide the query heads)", lo=1),
    }

    def scenario(self, sc: Scenario) -> Scenario:
        return with_kv_heads(sc, self["kv_heads"], self.label())


class MQA(Optimization):
    name = "mqa"
    summary = "multi-query attention: one KV head shared by all query heads"
    citation = "Shazeer 2019, Fast Transformer Decoding (arXiv:1911.02150)"
    order = 10  # spec transform

    def scenario(self, sc: Scenario) -> Scenario:
        return with_kv_heads(sc, 1, self.name)
