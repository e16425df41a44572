"""`fusion[:rope=,act=,norm=]`: fuse elementwise operators into their neighbouring GEMMs so
their activations never round-trip through HBM.

The default table already fuses the residual add into the norm (vLLM's fused_add_rms_norm) but
runs RoPE and the SwiGLU activation as kernels of their own (vLLM's rotary_embedding and
silu_and_mul) and writes the normalised activations for the next GEMM to re-read. Compilers
(TensorRT-LLM, torch.compile/Inductor epilogue fusion) remove those round trips:

- rope: RoPE applied in the QKV projection's epilogue: the rope op's read and write of the
  n·(H + K)·Dh query/key elements vanish; its FLOPs move to the GEMM's CUDA-core work.
- act: SwiGLU in the up/gate projection's epilogue (gated MLPs): the act op's read of n·2F and
  write of n·F vanish, and the GEMM writes n·F instead of n·2F (plain MLPs: the act op's n·F
  read and write vanish).
- norm: RMSNorm folded into the next linear layer (Graef et al. 2024, "FlashNorm"): the norm
  weights multiply into that layer's weights offline and the 1/RMS row scale is applied in its
  epilogue, so the normalised n·D tensor is never written (the add kernel still writes the
  residual stream) and the norm's weights are not read. RMSNorm models only.

Formulas (n = B·T tokens, activations at b bytes): saved bytes per layer = rope 2·n·(H+K)·Dh·b
+ act (gated) n·(2F + F + F)·b + norm n·D·b per norm; FLOPs unchanged, kernels per layer fewer
(which is what the calibrated profile's per-call overhead charges).

Limits: the epilogue work is assumed hidden under the GEMM (it runs on CUDA cores while the
tensor cores work); LayerNorm models keep their norms.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from rooflens.model.ops.op import Op
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.steps import Step
from rooflens.model.specs.dtypes import dtype_bytes

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario

NORM_FLOPS_PER_ELEMENT = 5.0  # model/ops/op.py norm_op: 5·n·D


class Fusion(Optimization):
    name = "fusion"
    summary = "fuse RoPE, SwiGLU and RMSNorm into neighbouring GEMMs: no HBM round trips"
    citation = "Graef et al. 2024 FlashNorm (arXiv:2407.09577); TensorRT-LLM epilogue fusion"
    order = 50  # table transform, after quantization and sparsity rewrote the GEMMs
    params: ClassVar[dict[str, Param]] = {
        "rope": Param(bool, True, "RoPE into the QKV projection's epilogue"),
        "act": Param(bool, True, "SwiGLU/GELU into the up projection's epilogue"),
        "norm": Param(bool, True, "RMSNorm folded into the next linear layer (FlashNorm)"),
    }

    def ops(self, ops: list[Op], sc: Scenario, step: Step) -> list[Op]:
        by_name = {op.name: i for i, op in enumerate(ops)}
        out = list(ops)
        drop: set[int] = set()
        ab = dtype_bytes(sc.precision.act_dtype)
        for i, op in enumerate(ops):
            if self["rope"] and op.name == "attn.rope" and "attn.qkv_proj" in by_name:
                j = by_name["attn.qkv_proj"]
                out[j] = replace(out[j], vector_flops=out[j].vector_flops + op.flops)
                drop.add(i)
            elif self["act"] and op.name.endswith(".act"):
                up = op.name.removesuffix(".act") + ".up_gate"
                if up in by_name:
                    out[by_name[up]] = _fold_act(out[by_name[up]], op, sc, ab)
                    drop.add(i)
            elif self["norm"] and op.kind == "norm" and sc.model.norm == "rmsnorm":
                normed = op.flops / NORM_FLOPS_PER_ELEMENT * ab  # the n·D output, bytes
                out[i] = replace(
                    op,
                    act_bytes=op.act_bytes - normed,
                    live_bytes=op.live_bytes - normed,
                    weight_bytes=0.0 * op.weight_bytes,
                )
        return [op for i, op in enumerate(out) if i not in drop]


def _fold_act(up: Op, act: Op, sc: Scenario, ab: float) -> Op:
    """The activation runs in the up/gate GEMM's epilogue; a gated GEMM writes F, not 2F."""
    saved = up.shape["m"] * up.shape["n"] / 2 * ab if sc.model.gated_mlp and "m" in up.shape else 0
    return replace(
        up,
        act_bytes=up.act_bytes - saved,
        live_bytes=up.live_bytes - saved,
        vector_flops=up.vector_flops + act.flops,
    )
