"""The feed-forward rows of a layer for the operator table (model/ops/table.py): the dense MLP
(up/gate, activation, down) and a mixture of experts (router, expert-parallel all-to-alls, the
fused routed experts of model/ops/moe.py, shared experts).
"""

from __future__ import annotations

from rooflens.model.ops.moe import moe_op
from rooflens.model.ops.rows import StepRows


def mlp(b: StepRows, prefix: str, count: int, d_ff: float) -> None:
    m, n, D = b.m, b.tokens, b.m.d_model
    if count == 0:
        return
    width = d_ff * (2 if m.gated_mlp else 1)
    b.gemm(f"{prefix}.up_gate", count, n, width, D)
    b.elementwise(f"{prefix}.act", count, 5.0, n * width, n * d_ff)
    b.gemm(f"{prefix}.down", count, n, D, d_ff)


def moe(b: StepRows) -> None:
    """Routed experts as one fused op (router GEMM separate), shared experts as an MLP.

    Distinct experts whose weights a step reads: each of the B·T tokens picks k of E
    experts; under uniform routing an expert is untouched with probability (1 − k/E)^(B·T),
    so E·(1 − (1 − k/E)^(B·T)) experts are read, not k (balls into bins).

    TP (ep = 1): every GPU holds a 1/tp slice of every expert and sees all tokens. EP: each
    of ep GPUs holds E/ep whole experts and serves the tokens of all r = ep/tp replicas, so
    it reads (E/ep)·(1 − (1 − k/E)^(r·B·T)) experts and computes B·T·k/tp assignments on
    average; tokens travel by an all-to-all dispatch and combine of the (B·T/tp)·k rows each
    GPU owns (GShard, Lepikhin et al. 2020; DeepSpeed-MoE, Rajbhandari et al. 2022).
    """
    m, n, D, tp, ep = b.m, b.tokens, b.m.d_model, b.tp, b.ep
    count = m.n_moe_layers
    if not count:
        return
    E, k = m.n_experts, m.experts_per_token
    Fe = m.d_ff_expert / tp if ep == 1 else float(m.d_ff_expert)
    # The router stays 16-bit under every quantization: engines build it unquantized (vLLM
    # mixtral.py and deepseek_v2.py: `gate = ReplicatedLinear(..., quant_config=None)`; gpt-oss:
    # a plain bf16 `torch.nn.Linear`), so a W4A16 or FP8 checkpoint's N = E GEMM runs cuBLAS'
    # 16-bit kernel, not the weight-only or scaled-mm one with its larger fixed cost.
    b.gemm("moe.router", count, n, E, D, plain=True)
    routed_tokens = n * (ep // tp if ep > 1 else 1)
    if ep > 1:
        rows = n / tp * k * D * b.ab
        b.comm("ep.dispatch", "all_to_all", count, rows, n_gpus=ep)
        b.comm("ep.combine", "all_to_all", count, rows, n_gpus=ep)
    act_dtype = b.sc.precision.act_dtype  # model/ops/moe.py: shared with kernel prediction
    wdt = b.sc.precision.expert_dtype
    experts = moe_op(b.phase, count, routed_tokens, D, Fe, k, E, ep, wdt, act_dtype,
                     b.group, m.gated_mlp, shape_tokens=n,
                     quant=b.sc.precision.quant_label(wdt))  # fmt: skip
    b.ops.append(experts)
    if m.n_shared_experts:  # TP-split like the dense MLP (its output joins the all-reduce)
        mlp(b, "moe.shared", count, m.n_shared_experts * m.d_ff_expert / tp)
