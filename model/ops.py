"""The operator table (DESIGN.md step 1): one row per operator of a forward step, with FLOPs and
bytes split by tensor kind, for the default serving stack (KV cache, fused/Flash attention, paged
KV, fused add+RMSNorm). Optimizations (model/optimizations/) transform this table from outside.

A step feeds T new tokens per sequence for B sequences whose attention spans L positions (the new
ones included): prefill is T = L = P; decode step i is T = 1, L = P + i; chunked prefill and
speculative verification are other (T, L). B, T and L may be numpy arrays: every formula is
plain arithmetic, so one call prices a whole grid of configurations (DESIGN.md step 4).

Counts per operator instance; `count` is how many times the instance repeats per step (layers).
FLOPs count 2 per multiply-add (DESIGN.md). Bytes are minimum HBM traffic: each operand read
once, each result written once.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hardware.errors import RooflensError
from model.attention import (
    ATTENTION_QUERY_TILE,
    KEYS_PER_SPLIT_MIN,
    PARTIAL_BYTES,
    attended_keys,
    attention_bandwidth_fraction,
    attention_op,
    attention_thread_blocks,
    combine_cost,
    decode_splits,
    kv_positions,
    regrid,
    resplit_attention,
    streamed_fraction,
)
from model.dtypes import compute_dtype, dtype_bytes
from model.mla import mla_decode_op, mla_prefill_op
from model.moe import moe_op
from model.op import (
    DEQUANT_ROW_TILE,
    DEQUANT_VECTOR_FLOPS_PER_WEIGHT,
    SCALE_BYTES,
    Num,
    Op,
    comm_op,
    dequant_vector_flops,
    elementwise_op,
    embedding_op,
    gemm_op,
    norm_op,
    weight_storage_bytes,
)
from model.params import norms_per_block
from model.scenario import Scenario
from model.ssm import mamba_ops
from model.vision import vision_ops

__all__ = [
    "ATTENTION_QUERY_TILE",
    "DEQUANT_ROW_TILE",
    "DEQUANT_VECTOR_FLOPS_PER_WEIGHT",
    "KEYS_PER_SPLIT_MIN",
    "PARTIAL_BYTES",
    "SCALE_BYTES",
    "Num",
    "Op",
    "attended_keys",
    "attention_bandwidth_fraction",
    "attention_op",
    "attention_thread_blocks",
    "build_ops",
    "combine_cost",
    "decode_ops",
    "decode_splits",
    "dequant_vector_flops",
    "gemm_op",
    "kv_positions",
    "regrid",
    "resplit_attention",
    "streamed_fraction",
    "weight_storage_bytes",
]  # fmt: skip


class _Builder:
    """Emits the ops of one step for a scenario; each method is one block of the layer."""

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
        self.ops.append(
            gemm_op(name, self.phase, count, M, N, K, wdt, self.sc.precision.act_dtype, self.group)
        )

    def per_head_gemm(self, name: str, count: int, heads: int, N: float, K: float) -> None:
        """`heads` products [n, K] · [K, N], each head with its own weight and its own input (a
        batched GEMM, model/op.py gemm_op's `heads`)."""
        act = self.sc.precision.act_dtype
        self.ops.append(gemm_op(name, self.phase, count, self.tokens, heads * N, K, self.wdt, act,
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
        """A collective of `payload` bytes per GPU (model/comm.py prices it by `collective`)."""
        self.ops.append(comm_op(name, self.phase, count, collective, payload, **shape))

    def check_parallel(self) -> None:
        """Expert parallelism spreads whole experts over ep GPUs: ep/tp data-parallel replicas
        of the tensor-parallel attention group (DeepSeek-V3 §3.4; vLLM/SGLang DP attention)."""
        m, ep, tp = self.m, self.ep, self.tp
        if ep == 1:
            return
        if not m.is_moe:
            raise RooflensError(f"--ep {ep} needs a mixture-of-experts model; {m.id} is dense")
        if m.n_experts % ep:
            raise RooflensError(f"--ep {ep} must divide {m.id}'s {m.n_experts} experts")
        if ep % tp:
            raise RooflensError(
                f"--ep {ep} must be a multiple of --tp {tp}: each EP GPU holds whole experts and "
                "attention runs on ep/tp replicas of the TP group"
            )

    def attention(self) -> None:
        m, B, T, L, tp = self.m, self.B, self.T, self.L, self.tp
        n = self.tokens
        Hg = m.n_heads // tp
        if m.attention == "mla":
            self._mla_attention(Hg)
            return
        Kg = self.sc.kv_heads_per_gpu
        Dh = m.head_dim
        La = m.n_attention_layers  # a hybrid's Mamba layers have no attention (self.mamba)
        self.gemm("attn.qkv_proj", La, n, (Hg + 2 * Kg) * Dh, m.d_model)
        if m.qk_norm:  # Qwen3/Gemma 3: RMSNorm over each q and k head (no residual)
            elems = n * (Hg + Kg) * Dh
            rows = n * (Hg + Kg)  # one RMSNorm row per q and k head, width Dh
            act = self.sc.precision.act_dtype
            self.ops.append(norm_op("attn.qk_norm", self.phase, La, rows, Dh, act, 0.0, "rmsnorm"))
        if m.positional == "rope":
            elems = n * (Hg + Kg) * Dh
            self.elementwise("attn.rope", La, 3.0, elems, elems)
        p = self.sc.precision
        # one attn.core row per layer kind (model.window_layers): full and sliding layers of
        # gpt-oss or Gemma 3 attend over different spans; shape["window"] says which
        for window, layers in m.window_layers.items():
            attention = attention_op(
                self.phase,
                layers,
                B,
                T,
                L,
                Hg,
                Kg,
                Dh,
                p.act_dtype,
                p.kv_dtype,
                window,
                sm_count=self.sc.gpu.sm_count,
                write_kernel=True,  # engines write K/V to the paged cache in a kernel of its own
            )
            self.ops.append(replace(attention, shape={**attention.shape, "window": window}))
        self.gemm("attn.o_proj", La, n, m.d_model, Hg * Dh)

    def mamba(self) -> None:
        """A hybrid's Mamba mixers (model/ssm.py), on the layers without attention."""
        if self.m.n_mamba_layers:
            self.ops += mamba_ops(self.sc, self.phase, self.B, self.T)

    def _mla_prefill(self, Hg: int) -> None:
        """MLA prefill as vLLM and SGLang run it: K and V decompressed from the latent by
        kv_b_proj (W_UK, W_UV) for every attended position, then standard multi-head attention
        with q·k over nope + rope dims and values of v_head_dim (DeepSeek-V2 §2.1.2); only the
        latent (kv_lora_rank + rope) is written to the cache. Absorption, which trades these
        GEMMs for wider attention, pays off only at decode, where it is used."""
        m, B, T, L = self.m, self.B, self.T, self.L
        n, D, R, rope = self.tokens, m.d_model, m.kv_lora_rank, m.qk_rope_head_dim
        Dqk, Dv = m.head_dim, m.value_head_dim
        self._mla_q_and_latent(Hg)
        positions = kv_positions(L, m.sliding_window, T)
        self.gemm("attn.kv_b_proj", m.n_layers, B * positions, Hg * (Dqk - rope + Dv), R)
        p = self.sc.precision
        self.ops.append(mla_prefill_op(self.phase, m.n_layers, B, T, L, Hg, Dqk, Dv, R, rope,
                                       p.act_dtype, p.kv_dtype, m.sliding_window,
                                       self.sc.gpu.sm_count))  # fmt: skip
        self.gemm("attn.o_proj", m.n_layers, n, D, Hg * Dv)

    def _mla_q_and_latent(self, Hg: int) -> None:
        m, n, D = self.m, self.tokens, self.m.d_model
        if m.q_lora_rank:
            self.gemm("attn.q_a_proj", m.n_layers, n, m.q_lora_rank, D)
            self.gemm("attn.q_b_proj", m.n_layers, n, Hg * m.head_dim, m.q_lora_rank)
        else:
            self.gemm("attn.q_proj", m.n_layers, n, Hg * m.head_dim, D)
        self.gemm("attn.kv_a_proj", m.n_layers, n, m.kv_lora_rank + m.qk_rope_head_dim, D)

    def _mla_attention(self, Hg: int) -> None:
        """DeepSeek MLA in its weight-absorbed form (DeepSeek-V2 paper §2.1.2): attention runs on
        the cached latent (kv_lora_rank + rope dims, shared by all heads, replicated across TP).
        Used for decode and speculative verification; prefill decompresses (`_mla_prefill`)."""
        if self.phase == "prefill":
            self._mla_prefill(Hg)
            return
        m, B, T, L = self.m, self.B, self.T, self.L
        n, D, R, rope = self.tokens, m.d_model, m.kv_lora_rank, m.qk_rope_head_dim
        nope, Dv = m.head_dim - rope, m.value_head_dim
        self._mla_q_and_latent(Hg)
        self.per_head_gemm("attn.q_absorb", m.n_layers, Hg, R, nope)  # q_nope · W_UK per head
        p = self.sc.precision
        self.ops.append(
            mla_decode_op(
                self.phase,
                m.n_layers,
                B,
                T,
                L,
                Hg,
                R,
                rope,
                p.act_dtype,
                p.kv_dtype,
                m.sliding_window,
                self.sc.gpu.sm_count,
            )
        )
        self.per_head_gemm("attn.v_absorb", m.n_layers, Hg, Dv, R)
        self.gemm("attn.o_proj", m.n_layers, n, D, Hg * Dv)

    def mlp(self, prefix: str, count: int, d_ff: float) -> None:
        m, n, D = self.m, self.tokens, self.m.d_model
        if count == 0:
            return
        width = d_ff * (2 if m.gated_mlp else 1)
        self.gemm(f"{prefix}.up_gate", count, n, width, D)
        self.elementwise(f"{prefix}.act", count, 5.0, n * width, n * d_ff)
        self.gemm(f"{prefix}.down", count, n, D, d_ff)

    def moe(self) -> None:
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
        m, n, D, tp, ep = self.m, self.tokens, self.m.d_model, self.tp, self.ep
        count = m.n_moe_layers
        if not count:
            return
        E, k = m.n_experts, m.experts_per_token
        Fe = m.d_ff_expert / tp if ep == 1 else float(m.d_ff_expert)
        self.gemm("moe.router", count, n, E, D)
        routed_tokens = n * (ep // tp if ep > 1 else 1)
        if ep > 1:
            rows = n / tp * k * D * self.ab
            self.comm("ep.dispatch", "all_to_all", count, rows, n_gpus=ep)
            self.comm("ep.combine", "all_to_all", count, rows, n_gpus=ep)
        act_dtype = self.sc.precision.act_dtype  # model/moe.py: shared with kernel prediction
        wdt = self.sc.precision.expert_dtype
        experts = moe_op(self.phase, count, routed_tokens, D, Fe, k, E, ep, wdt, act_dtype,
                         self.group, m.gated_mlp, shape_tokens=n)  # fmt: skip
        self.ops.append(experts)
        if m.n_shared_experts:  # TP-split like the dense MLP (its output joins the all-reduce)
            self.mlp("moe.shared", count, m.n_shared_experts * m.d_ff_expert / tp)

    def build(self) -> list[Op]:
        m, n, D = self.m, self.tokens, self.m.d_model
        self.check_parallel()
        images = self.sc.workload.images_per_prompt
        if self.phase == "prefill" and images and m.vision:  # the encoder, before the LM
            self.ops += vision_ops(self.sc, self.B * images)
        self.ops.append(embedding_op("embed", self.phase, 1, n, D, self.sc.precision.act_dtype))
        self.norm("norm.attn", m.n_layers)
        self.attention()
        self.mamba()
        self.tp_all_reduce(m.n_layers)
        if norms_per_block(m) == 4:  # Gemma 3: a norm on each sublayer's output, before the add
            self.norm("norm.post_attn", m.n_layers, fused_residual=False)
        if not m.parallel_block:
            self.norm("norm.mlp", m.n_layers)
        elif norms_per_block(m) == 2:  # GPT-NeoX's parallel residual: ln2 on the same input
            self.norm("norm.mlp", m.n_layers, fused_residual=False)
        self.mlp("mlp", m.n_dense_layers, m.d_ff / self.tp)
        self.moe()
        gather = m.n_moe_layers if self.ep > 1 and not m.n_shared_experts else 0
        self.tp_all_reduce(m.n_layers - gather)
        self.tp_all_reduce(gather, "all_gather")
        if norms_per_block(m) == 4:
            self.norm("norm.post_mlp", m.n_layers, fused_residual=False)
        if self.pp > 1:  # activations to the next stage (Megatron-LM PP; Narayanan et al. 2021)
            span = max(self.tp, self.ep) * self.pp
            payload = self.tokens * D * self.ab
            self.comm("pp.send_recv", "send_recv", self.pp - 1, payload, n_gpus=2, span_gpus=span)
        self.norm("norm.final", 1, fused_residual=False)
        self.gemm("lm_head", 1, self.B * self.lm_tokens, m.vocab_size / self.tp, D, plain=True)
        return self.ops


def build_ops(sc: Scenario, phase: str, B: Num, T: Num, L: Num, lm_tokens: Num = 1.0) -> list[Op]:
    """Operators of one step: B sequences, T new tokens each, attention over L positions.

    `lm_tokens` is how many positions per sequence get logits: 1 in prefill (last token only,
    DESIGN.md), T in decode or verification.
    """
    return _Builder(sc, phase, B, T, L, lm_tokens).build()


def decode_ops(sc: Scenario, kv_len: Num) -> list[Op]:
    """One decode step whose attention spans `kv_len` positions (the new token included)."""
    return build_ops(sc, "decode", float(sc.workload.batch), 1.0, kv_len, lm_tokens=1.0)
