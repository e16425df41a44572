"""The row emitter under the operator table (model/ops/table.py): `StepRows` holds one step's
scenario,
shape (B, T, L) and dtypes, and appends the generic rows every block is made of (GEMM, per-head
GEMM, elementwise, norm, collective, the TP all-reduce). The blocks that use it are in
ops_attention.py (attention, MLA, Mamba) and ops_ffn.py (MLP, MoE).
"""

from __future__ import annotations

from typing import Any

from rooflens.model.ops.op import Num, Op, comm_op, elementwise_op, gemm_op, norm_op
from rooflens.model.predict.scenario import Scenario
from rooflens.model.specs.dtypes import compute_dtype, dtype_bytes, unquantized


class StepRows:
    """The state of one step being built (scenario, B, T, L, dtypes, parallelism) and the rows
    emitted so far; each method appends one generic row."""

    def __init__(self, sc: Scenario, phase: str, B: Num, T: Num, L: Num, lm_tokens: Num):
        self.sc, self.m, self.phase = sc, sc.model, phase
        self.B, self.T, self.L, self.lm_tokens = B, T, L, lm_tokens
        p = sc.precision
        self.tp, self.ep, self.pp = sc.parallel.tp, sc.parallel.ep, sc.parallel.pp
        self.wdt, self.group = p.weight_dtype, p.weight_group_size
        self.ab, self.kvb = dtype_bytes(p.act_dtype), dtype_bytes(p.kv_dtype)
        self.mm_dtype = compute_dtype(p.weight_dtype, p.act_dtype)
        self.attn_dtype = compute_dtype(p.kv_dtype, p.act_dtype)
        self.tokens = B * T  # rows of every per-token GEMM
        self.ops: list[Op] = []

    def gemm(self, name: str, count: int, M: Num, N: float, K: float, plain: bool = False) -> None:
        """Y[M,N] = X[M,K] · W[N,K]ᵀ. `plain` weights (lm_head) stay 16-bit under quantization."""
        wdt = ("fp32" if self.wdt == "fp32" else "bf16") if plain else self.wdt
        p = self.sc.precision
        self.ops.append(gemm_op(name, self.phase, count, M, N, K, wdt, p.act_dtype, self.group,
                                quant=p.quant_label(wdt)))  # fmt: skip

    def per_head_gemm(self, name: str, count: int, heads: int, N: float, K: float) -> None:
        """`heads` products [n, K] · [K, N], each head with its own weight and its own input (a
        batched GEMM, model/ops/op.py gemm_op's `heads`): MLA's absorbed W_UK and W_UV. They run
        16-bit under every scheme: engines have no quantized bmm for them and keep a 16-bit
        copy of the dequantized kv_b_proj at load (vLLM's MLA backend, common.py
        process_weights_after_loading), so neither a weight-only nor an FP8 kernel runs them."""
        wide = unquantized(self.sc.precision.act_dtype)
        self.ops.append(gemm_op(name, self.phase, count, self.tokens, heads * N, K, wide, wide,
                                self.group, heads=heads))  # fmt: skip

    def elementwise(self, name: str, count: int, flops_per_element: float, read: Num,
                    write: Num) -> None:  # fmt: skip
        act = self.sc.precision.act_dtype
        self.ops.append(elementwise_op(name, self.phase, count, read, write, act,
                                       flops_per_element))  # fmt: skip

    def norm(self, name: str, count: int, fused_residual: bool = True) -> None:
        """(Fused add +) norm: read x (and the residual), write y (and the residual)."""
        self.ops.append(
            norm_op(
                name,
                self.phase,
                count,
                self.tokens,
                self.m.d_model,
                self.sc.precision.act_dtype,
                float(fused_residual),
                "layernorm" if self.m.norm == "layernorm" else "rmsnorm",
            )
        )

    def tp_all_reduce(self, count: int, collective: str = "all_reduce") -> None:
        """Megatron TP: one all-reduce of the [B·T, D] activations after o_proj and after down
        (an all-gather after expert-parallel MoE layers, whose combine leaves each TP rank a
        1/tp share of the tokens)."""
        if self.tp == 1 or count == 0:
            return
        payload = self.tokens * self.m.d_model * self.ab
        self.comm(f"tp.{collective}", collective, count, payload, n_gpus=self.tp)

    def comm(self, name: str, collective: str, count: int, payload: Num, **shape: Any) -> None:
        """A collective of `payload` bytes per GPU (model/pricing/comm.py prices it by
        `collective`)."""
        self.ops.append(comm_op(name, self.phase, count, collective, payload, **shape))
