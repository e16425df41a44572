"""`early-exit:mean_layers=F`: depth-adaptive decoding (CALM), a share F of the layers per token.

Mechanism (Schuster et al. 2022, CALM; Elbayad et al. 2020, depth-adaptive transformer): a
confidence test after each layer lets an easy token leave early and skip the remaining layers.
The skipped layers still owe KV entries, because later tokens attend to this token at every
layer: CALM copies the exited hidden state to the skipped layers and projects it to K and V
there (state propagation, §3.3), so a skipped layer costs its K/V projection, not its block.

Formulas, per decode step of B sequences and T tokens each (n = B·T rows), layer ops only:
- FLOPs, activation, KV and communication bytes scale by F (each token runs F of the layers);
- weight bytes scale by 1 − (1 − F)^B: a layer's weights are read if any sequence in the batch
  still runs it (the batch-level "effective sparsity" X^N of anchors E11 with X = 1 − F and
  exits taken as independent per token), so at large batch nothing is saved;
- `early_exit.kv_fill`, per layer: the K/V projection of the (1 − F)·n skipped rows,
  2·(1 − F)·n·D·W_kv FLOPs, writing their cache entries, and reading the K/V weight slice of
  layers no sequence ran ((1 − F)^B of them).
Prefill runs every layer (exits are per generated token). Embedding, final norm and lm_head run
for every token. F = 1 is the identity. Limits: F is an input (CALM reports 1.5–3× fewer layers
on its tasks); the confidence classifier's cost is ignored.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from rooflens.model.ops.op import Num, Op, gemm_op, weight_storage_bytes
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.steps import Step
from rooflens.model.specs.dtypes import dtype_bytes

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario

NOT_PER_LAYER = ("embed", "norm.final", "lm_head", "pp.send_recv")


def is_layer_op(op: Op) -> bool:
    return op.name not in NOT_PER_LAYER and not op.name.startswith(("medusa.", "early_exit."))


class EarlyExit(Optimization):
    name = "early-exit"
    summary = "CALM early exit: tokens run a share F of the layers; skipped layers still get KV"
    citation = "Schuster et al. 2022 (NeurIPS), Confident Adaptive Language Modeling"
    order = 35
    params: ClassVar[dict[str, Param]] = {
        "mean_layers": Param(
            float,
            1.0,
            "average share of layers a generated token runs (F)",
            lo=0,
            lo_open=True,
            hi=1,
        ),
    }

    def ops(self, ops: list[Op], sc: Scenario, step: Step) -> list[Op]:
        F = self["mean_layers"]
        if F == 1.0 or step.phase == "prefill":
            return ops
        weight_share = 1.0 - (1.0 - F) ** step.B
        out = [
            op.scaled(
                flops=F, act_bytes=F, kv_bytes=F, comm_bytes=F, live_bytes=F,
                weight_bytes=weight_share,
            )
            if is_layer_op(op)
            else op
            for op in ops
        ]  # fmt: skip
        return [*out, self._kv_fill(sc, step, 1.0 - F, (1.0 - F) ** step.B)]

    def _kv_fill(self, sc: Scenario, step: Step, skipped: float, unread: Num) -> Op:
        """K/V projection of the skipped rows at every layer (MLA: the latent projection)."""
        m, p = sc.model, sc.precision
        if m.attention == "mla":
            width = float(m.kv_lora_rank + m.qk_rope_head_dim)
        else:
            width = float(2 * sc.kv_heads_per_gpu * m.head_dim)
        rows = skipped * step.B * step.T
        op = gemm_op("early_exit.kv_fill", step.phase, m.n_layers, rows, width, m.d_model,
                     p.weight_dtype, p.act_dtype, p.weight_group_size,
                     quant=p.quant_label(p.weight_dtype))  # fmt: skip
        full_weights = weight_storage_bytes(width * m.d_model, p.weight_dtype, p.weight_group_size)
        return replace(
            op,
            weight_bytes=full_weights * unread,
            act_bytes=rows * m.d_model * dtype_bytes(p.act_dtype),  # the exited hidden state
            kv_bytes=rows * width * dtype_bytes(p.kv_dtype),  # the owed cache entries
        )
