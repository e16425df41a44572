"""The routed experts of a mixture-of-experts layer as one fused operator (`moe.experts`): the
formula the operator table (model/ops/ffn_block.py `moe`) and single-kernel prediction
(model/pricing/kernel_table.py, op `moe`) share, so a measured fused-MoE kernel and the serving
model
are priced alike.

One GPU holds E/ep experts, each an MLP of width I (its 1/tp slice under expert TP) over hidden
size D, and receives `tokens` tokens routed k-of-E over all E experts (for EP: the tokens of
every replica whose experts live here). Under uniform routing:

- assignments (token, expert) on this GPU: tokens · k / ep;
- distinct experts whose weights are read: (E/ep) · (1 − (1 − k/E)^tokens) (balls into bins:
  each expert is untouched with probability (1 − k/E)^tokens; k at one token, all at many);
- FLOPs: 2 · assignments · matrices · D · I (matrices = 3 gated, 2 plain);
- bytes: the read experts' weights, and per assignment x read and y written (2·D), the up/gate
  output written ((matrices − 1)·I) and the activation's in/out read (2·I).

GShard (Lepikhin et al. 2020) and DeepSpeed-MoE (Rajbhandari et al. 2022) for the layout;
vLLM's fused_moe (one grouped GEMM per projection over the sorted assignments) is the kernel.
Routing skew is an optimization's business (model/optimizations/moe.py), not this formula's.
Quantities may be numpy arrays (broadcast-safe).
"""

from __future__ import annotations

import numpy as np

from rooflens.model.ops.op import Num, Op, weight_storage_bytes
from rooflens.model.specs.dtypes import compute_dtype, dtype_bytes
from rooflens.model.specs.quant import PLAIN_FAMILIES, family_of


def distinct_experts(tokens: Num, topk: int | Num, n_experts: int | Num, ep: int | Num) -> Num:
    """Experts of this GPU (E/ep) that at least one of `tokens` uniformly routed tokens picks."""
    return n_experts / ep * (1.0 - (1.0 - topk / n_experts) ** tokens)


def routed_work(
    tokens: Num,
    topk: int | Num,
    n_experts: int | Num,
    ep: int | Num,
    assignments: Num | None = None,
    experts_read: Num | None = None,
) -> tuple[Num, Num]:
    """(assignments, distinct experts read) on this GPU: given values where stated (a known
    routing, e.g. a benchmark's skewed one; NaN entries fall back), else uniform routing."""
    uniform_assignments = tokens * topk / ep
    uniform_read = distinct_experts(tokens, topk, n_experts, ep)
    if assignments is not None:
        uniform_assignments = np.where(np.isnan(assignments), uniform_assignments, assignments)
    if experts_read is not None:
        uniform_read = np.where(np.isnan(experts_read), uniform_read, experts_read)
    return uniform_assignments, uniform_read


def moe_op(
    phase: str,
    count: int,
    tokens: Num,
    hidden: Num,
    inter: Num,
    topk: int | Num,
    n_experts: int | Num,
    ep: int | Num,
    weight_dtype: str,
    act_dtype: str,
    group_size: int = 128,
    gated: bool = True,
    name: str = "moe.experts",
    shape_tokens: Num | None = None,
    assignments: Num | None = None,
    experts_read: Num | None = None,
    quant: str | None = None,
) -> Op:
    """Routed experts on one GPU: `tokens` routed over all E experts, E/ep held here, each of
        width `inter` (per GPU). `shape_tokens` is the token count the op reports (default
        `tokens`; the table reports its own step's tokens under EP). `assignments` and
        `experts_read` replace the uniform-routing estimates where a routing is known. The call is
    this GPU's slice in `kernels predict`'s `moe` columns (inter_size already per GPU)."""
    call = {"op": "moe", "num_tokens": tokens, "hidden_size": hidden, "inter_size": inter,
            "topk": topk, "num_experts": n_experts, "moe_tp_size": 1, "moe_ep_size": ep,
            "dtype": act_dtype, "weight_dtype": weight_dtype, "group_size": group_size,
            "gated": int(gated)}  # fmt: skip
    if assignments is not None:
        call["assignments"] = assignments
    if experts_read is not None:
        call["experts_read"] = experts_read
    if quant:  # the kernel family, where the operands alone do not name it (model/ops/op.py)
        call["quant"] = quant
    family = quant or family_of(weight_dtype, act_dtype)
    family = None if family in PLAIN_FAMILIES else family  # 16-bit: the bare kind's terms
    matrices = 3 if gated else 2
    ab = dtype_bytes(act_dtype)
    assignments, distinct = routed_work(tokens, topk, n_experts, ep, assignments, experts_read)
    act = assignments * (2 * hidden + (matrices - 1) * inter + inter * 2) * ab
    weights = distinct * weight_storage_bytes(matrices * hidden * inter, weight_dtype, group_size)
    return Op(
        name=name,
        phase=phase,
        kind="gemm",
        count=count,
        flops=2.0 * assignments * matrices * hidden * inter,
        weight_bytes=weights,
        act_bytes=act,
        kv_bytes=0.0,
        compute_dtype=compute_dtype(weight_dtype, act_dtype),
        live_bytes=act,
        shape={
            "tokens": tokens if shape_tokens is None else shape_tokens,
            "experts_read": distinct,
            "n_experts": n_experts,
            "topk": topk,
            **({"family": family} if family else {}),
        },
        call=call,
    )
