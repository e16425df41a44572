"""The e2e decoder's mixing blocks (validate/e2e/decoder.py builds the layers from them):
attention with its static KV cache, the dense MLP and the MoE block, each region under the
prediction's operator scope.

Attention covers MHA/GQA/MQA, biases, Qwen3/Gemma 3's per-head q/k RMSNorm (`attn.qk_norm`,
before RoPE), a per-layer window (a sliding layer masks keys more than `window` positions back;
the static cache keeps every position) and gpt-oss's attention sinks: a learned logit per head
that joins each softmax's denominator and adds nothing to the output (HF GptOssAttention
`sinks`; gpt-oss model card §2.1). The sink runs inside the same fused attention call as a
virtual key in cache slot 0: its key is a unit vector in a spare dimension, each query head
carries its sink logit · √Dh in that dimension and its value is zero, so
softmax([q·K, s_h]) · [V; 0] is exactly what the kernel computes, with no second pass.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from rooflens.model.specs.params import router_params
from rooflens.validate.e2e.backend import causal_mask
from rooflens.validate.e2e.layout import ACTIVATION_NAMES

if TYPE_CHECKING:
    from rooflens.validate.e2e.ctx import Ctx, Rope

ACTIVATIONS = dict(zip(ACTIVATION_NAMES, (F.silu, F.gelu, F.relu), strict=True))
SINK_DIMS = 8  # spare key dimensions that carry the sink (one used; 8 keeps kernels aligned)


class Attention(nn.Module):
    """One layer's attention at `window` (0 = full) with its static cache: K [B, K, slots +
    capacity, Dh (+ SINK_DIMS with sinks)], V [B, K, slots + capacity, Dh]."""

    def __init__(self, ctx: Ctx, batch: int, capacity: int, rope: Rope | None, window: int):
        super().__init__()
        m, self.ctx, self.rope, self.window = ctx.spec, ctx, rope, window
        H, K, Dh = m.n_heads, m.n_kv_heads, m.head_dim
        self.widths = (H * Dh, K * Dh, K * Dh)
        self.qkv = ctx.linear(m.d_model, sum(self.widths), m.linear_bias or m.qkv_bias)
        self.o_proj = ctx.linear(H * Dh, m.d_model, m.linear_bias)
        self.q_norm = self.k_norm = None
        if m.qk_norm:  # Qwen3Attention / Gemma3Attention: RMSNorm(head_dim) on q and on k
            self.q_norm, self.k_norm = ctx.head_norm(), ctx.head_norm()
        self.sinks = None
        self.slots = 0  # cache slots before position 0 (the sink's virtual key)
        key_dim = Dh
        if m.attention_sinks:
            self.sinks = nn.Parameter(torch.empty(H, **ctx.kw))  # type: ignore[arg-type]
            self.slots, key_dim = 1, Dh + SINK_DIMS
        k_cache = torch.zeros(batch, K, self.slots + capacity, key_dim, **ctx.kw)  # type: ignore[arg-type]
        if self.sinks is not None:
            k_cache[:, :, 0, Dh] = 1.0  # the sink's key: scores q·k = the query's sink logit
        self.register_buffer("k_cache", k_cache, persistent=False)
        v_cache = torch.zeros(batch, K, self.slots + capacity, Dh, **ctx.kw)  # type: ignore[arg-type]
        self.register_buffer("v_cache", v_cache, persistent=False)

    def forward(self, x: torch.Tensor, start: int) -> torch.Tensor:  # x [B, T, D]
        m, scope, backend = self.ctx.spec, self.ctx.scope, self.ctx.backend
        B, T, _ = x.shape
        with scope("attn.qkv_proj"):
            q, k, v = backend.linear(x, self.qkv).split(self.widths, dim=-1)
            q = q.view(B, T, m.n_heads, m.head_dim)
            k = k.view(B, T, m.n_kv_heads, m.head_dim)
            v = v.view(B, T, m.n_kv_heads, m.head_dim)
        if self.q_norm is not None and self.k_norm is not None:
            with scope("attn.qk_norm"):
                q, k = backend.norm(q, self.q_norm), backend.norm(k, self.k_norm)
        if self.rope is not None:
            with scope("attn.rope"):
                q, k = self.rope(q, start), self.rope(k, start)
        with scope("attn.core"):
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B, h, T, Dh]
            o = self._attend(q, k, v, start)
            o = o.transpose(1, 2).reshape(B, T, m.n_heads * m.head_dim)
        with scope("attn.o_proj"):
            return backend.linear(o, self.o_proj)

    def _attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start: int
    ) -> torch.Tensor:
        """Write k, v [B, K, T, Dh] at positions start.. into the cache; attend q over it."""
        Dh, first = q.shape[-1], self.slots + start
        k_cache, v_cache = self.k_cache[self.ctx.rows], self.v_cache[self.ctx.rows]
        T = q.shape[2]
        k_cache[:, :, first : first + T, :Dh] = k
        v_cache[:, :, first : first + T] = v
        if self.sinks is None:
            if start:  # attend over the cache: prompt and earlier steps included
                k, v = k_cache[:, :, : start + T], v_cache[:, :, : start + T]
            return self.ctx.backend.attend(q, k, v, start, self.window)
        # [B, H, T, SINK_DIMS]: the sink logit, scaled so that q·k·(1/√Dh) recovers it
        spare = q.new_zeros(*q.shape[:3], SINK_DIMS)
        spare[..., 0] = (self.sinks * math.sqrt(Dh))[:, None]
        keys = k_cache[:, :, : first + T]
        allowed = causal_mask(start, T, keys.shape[2] - 1, self.window, q.device)
        allowed = torch.cat((allowed.new_ones(T, 1), allowed), dim=1)  # the sink: always seen
        q = torch.cat((q, spare), dim=-1)
        return self.ctx.backend.attend_masked(
            q, keys, v_cache[:, :, : first + T], allowed, Dh**-0.5
        )


def activate(ctx: Ctx, h: torch.Tensor) -> torch.Tensor:
    act = ACTIVATIONS[ctx.spec.activation]
    if ctx.spec.gated_mlp:
        gate, up = h.chunk(2, dim=-1)
        return act(gate) * up
    return act(h)


class MLP(nn.Module):
    """down(act(up_gate(x))): gate and up as one GEMM of width 2F when gated (SwiGLU)."""

    def __init__(self, ctx: Ctx, d_ff: int, prefix: str):
        super().__init__()
        m, self.ctx, self.prefix = ctx.spec, ctx, prefix
        self.up_gate = ctx.linear(m.d_model, d_ff * (2 if m.gated_mlp else 1), m.linear_bias)
        self.down = ctx.linear(d_ff, m.d_model, m.linear_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scope, backend = self.ctx.scope, self.ctx.backend
        with scope(f"{self.prefix}.up_gate"):
            h = backend.linear(x, self.up_gate)
        with scope(f"{self.prefix}.act"):
            h = activate(self.ctx, h)
        with scope(f"{self.prefix}.down"):
            return backend.linear(h, self.down)


class MoE(nn.Module):
    """A sparse block: router (with a per-expert bias where model/specs/params.py counts one:
    gpt-oss's GptOssTopKRouter), top-k of the softmax renormalised, which equals a softmax over
    the top-k logits (Mixtral, Qwen3-MoE `norm_topk_prob`, gpt-oss), each expert a (gated) MLP
    over the tokens routed to it; shared experts as one always-on MLP (DeepSeekMoE)."""

    def __init__(self, ctx: Ctx):
        super().__init__()
        m, self.ctx = ctx.spec, ctx
        E, F_, D = m.n_experts, m.d_ff_expert, m.d_model
        width = F_ * (2 if m.gated_mlp else 1)
        self.router = ctx.linear(D, E, bias=router_params(m) > D * E)
        self.w_up = nn.Parameter(torch.empty(E, width, D, **ctx.kw))  # type: ignore[arg-type]
        self.w_down = nn.Parameter(torch.empty(E, D, F_, **ctx.kw))  # type: ignore[arg-type]
        self.b_up = self.b_down = None
        if m.linear_bias:
            self.b_up = nn.Parameter(torch.zeros(E, width, **ctx.kw))  # type: ignore[arg-type]
            self.b_down = nn.Parameter(torch.zeros(E, D, **ctx.kw))  # type: ignore[arg-type]
        shared = m.n_shared_experts * F_
        self.shared = MLP(ctx, shared, "moe.shared") if shared else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m, scope = self.ctx.spec, self.ctx.scope
        flat = x.reshape(-1, m.d_model)  # [B·T, D]
        with scope("moe.router"):
            probs = torch.softmax(self.ctx.backend.linear(flat, self.router).float(), dim=-1)
            weights, chosen = torch.topk(probs, m.experts_per_token, dim=-1)  # [B·T, k]
            weights = (weights / weights.sum(dim=-1, keepdim=True)).to(flat.dtype)
        with scope("moe.experts"):
            out = torch.zeros_like(flat)
            for e in range(m.n_experts):
                rows, slot = torch.nonzero(chosen == e, as_tuple=True)
                if rows.numel() == 0:
                    continue
                h = F.linear(flat[rows], self.w_up[e], None if self.b_up is None else self.b_up[e])
                b_down = None if self.b_down is None else self.b_down[e]
                y = F.linear(activate(self.ctx, h), self.w_down[e], b_down)
                out.index_add_(0, rows, y * weights[rows, slot, None])
        if self.shared is not None:
            out = out + self.shared(flat)
        return out.view_as(x)
