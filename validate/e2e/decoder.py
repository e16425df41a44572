"""A runnable decoder in plain torch, built from a ModelSpec, for `rooflens validate e2e`.

Its layout is the operator table's (model/ops.py), so each region of the forward runs under a
`torch.profiler.record_function` scope named after the prediction's operator: `embed`,
`norm.attn` (the residual add fused in, as the table prices it), `attn.qkv_proj` (one fused QKV
GEMM: the parameters of separate q, k, v), `attn.rope`, `attn.core` (KV-cache write and
attention), `attn.o_proj`, `norm.mlp`, `mlp.up_gate` (gate and up as one GEMM), `mlp.act`,
`mlp.down`, `moe.router`, `moe.experts`, `moe.shared.*`, `norm.final`, `lm_head` (last position
only in prefill, DESIGN.md). Scopes cost a little host time, so they are on only while profiling.

Covers RMSNorm/LayerNorm, RoPE or learned positions, MHA/GQA/MQA, sliding windows, gated or
plain MLPs (silu, gelu, relu), biases, parallel blocks (GPT-J/NeoX/Phi), tied or untied lm_head,
and MoE with a top-k softmax router (Mixtral). Not MLA or ALiBi. The KV cache is static:
[B, K, capacity, Dh] per layer, allocated once, written in place (graph-capturable).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from hardware.errors import RooflensError
from model.params import norms_per_block
from model.spec import ModelSpec
from validate.e2e.backend import TorchBackend
from validate.e2e.scopes import Scopes

ACTIVATIONS = {"silu": F.silu, "gelu": F.gelu, "relu": F.relu}
NORM_EPS = 1e-5
ROPE_THETA = 10000.0  # RoFormer (Su et al. 2021); the base does not change the cost
INIT_STD = 0.02  # GPT-2's initializer_range: keeps random activations finite in bf16


class Ctx:
    """What every module of one decoder shares: spec, backend, scopes, tensor options."""

    def __init__(self, spec: ModelSpec, backend: TorchBackend, dtype: torch.dtype, device: str):
        self.spec, self.backend, self.scope = spec, backend, Scopes()
        self.rows = slice(None)  # the cache rows (sequences) the current forward fills
        self.kw: dict[str, object] = {"dtype": dtype, "device": device}

    def norm(self) -> nn.Module:
        D = self.spec.d_model
        if self.spec.norm == "layernorm":
            return nn.LayerNorm(D, eps=NORM_EPS, **self.kw)  # type: ignore[arg-type]
        return nn.RMSNorm(D, eps=NORM_EPS, **self.kw)  # type: ignore[arg-type]

    def linear(self, n_in: int, n_out: int, bias: bool) -> nn.Linear:
        return nn.Linear(n_in, n_out, bias=bias, **self.kw)  # type: ignore[arg-type]


class Rope(nn.Module):
    """Rotary embedding, rotate-half layout (GPT-NeoX / HF Llama): x·cos + rot(x)·sin."""

    def __init__(self, head_dim: int, capacity: int, ctx: Ctx):
        super().__init__()
        device = ctx.kw["device"]
        inv = 1.0 / ROPE_THETA ** (torch.arange(0, head_dim, 2, device=device) / head_dim)
        angles = torch.outer(torch.arange(capacity, device=device, dtype=inv.dtype), inv)
        angles = torch.cat((angles, angles), dim=-1)  # [S, Dh]
        self.register_buffer("cos", angles.cos().to(ctx.kw["dtype"]), persistent=False)  # type: ignore[arg-type]
        self.register_buffer("sin", angles.sin().to(ctx.kw["dtype"]), persistent=False)  # type: ignore[arg-type]

    def forward(self, x: torch.Tensor, start: int) -> torch.Tensor:  # x [B, T, h, Dh]
        T = x.shape[1]
        cos, sin = self.cos[start : start + T, None], self.sin[start : start + T, None]
        x1, x2 = x.chunk(2, dim=-1)
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Attention(nn.Module):
    def __init__(self, ctx: Ctx, batch: int, capacity: int, rope: Rope | None):
        super().__init__()
        m, self.ctx, self.rope = ctx.spec, ctx, rope
        H, K, Dh = m.n_heads, m.n_kv_heads, m.head_dim
        self.widths = (H * Dh, K * Dh, K * Dh)
        self.qkv = ctx.linear(m.d_model, sum(self.widths), m.linear_bias or m.qkv_bias)
        self.o_proj = ctx.linear(H * Dh, m.d_model, m.linear_bias)
        cache = torch.zeros(batch, K, capacity, Dh, **ctx.kw)  # type: ignore[arg-type]
        self.register_buffer("k_cache", cache, persistent=False)
        self.register_buffer("v_cache", cache.clone(), persistent=False)

    def forward(self, x: torch.Tensor, start: int) -> torch.Tensor:  # x [B, T, D]
        m, scope, backend = self.ctx.spec, self.ctx.scope, self.ctx.backend
        B, T, _ = x.shape
        with scope("attn.qkv_proj"):
            q, k, v = backend.linear(x, self.qkv).split(self.widths, dim=-1)
            q = q.view(B, T, m.n_heads, m.head_dim)
            k = k.view(B, T, m.n_kv_heads, m.head_dim)
            v = v.view(B, T, m.n_kv_heads, m.head_dim)
        if self.rope is not None:
            with scope("attn.rope"):
                q, k = self.rope(q, start), self.rope(k, start)
        with scope("attn.core"):
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B, h, T, Dh]
            k_cache, v_cache = self.k_cache[self.ctx.rows], self.v_cache[self.ctx.rows]
            k_cache[:, :, start : start + T] = k
            v_cache[:, :, start : start + T] = v
            if start:  # attend over the cache: prompt and earlier steps included
                k, v = k_cache[:, :, : start + T], v_cache[:, :, : start + T]
            o = backend.attend(q, k, v, start, m.sliding_window)
            o = o.transpose(1, 2).reshape(B, T, m.n_heads * m.head_dim)
        with scope("attn.o_proj"):
            return backend.linear(o, self.o_proj)


def _activate(ctx: Ctx, h: torch.Tensor) -> torch.Tensor:
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
            h = _activate(self.ctx, h)
        with scope(f"{self.prefix}.down"):
            return backend.linear(h, self.down)


class MoE(nn.Module):
    """Mixtral's sparse block: softmax router, top-k experts renormalised, each expert a (gated)
    MLP over the tokens routed to it; shared experts as one always-on MLP (DeepSeekMoE)."""

    def __init__(self, ctx: Ctx):
        super().__init__()
        m, self.ctx = ctx.spec, ctx
        E, F_, D = m.n_experts, m.d_ff_expert, m.d_model
        width = F_ * (2 if m.gated_mlp else 1)
        self.router = ctx.linear(D, E, bias=False)
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
                y = F.linear(_activate(self.ctx, h), self.w_down[e], b_down)
                out.index_add_(0, rows, y * weights[rows, slot, None])
        if self.shared is not None:
            out = out + self.shared(flat)
        return out.view_as(x)


class Layer(nn.Module):
    def __init__(self, ctx: Ctx, batch: int, capacity: int, rope: Rope | None, moe: bool):
        super().__init__()
        m, self.ctx = ctx.spec, ctx
        self.norm_attn = ctx.norm()
        self.attn = Attention(ctx, batch, capacity, rope)
        self.norm_mlp = ctx.norm() if norms_per_block(m) == 2 else None
        self.mlp: nn.Module = MoE(ctx) if moe else MLP(ctx, m.d_ff, "mlp")

    def forward(
        self, h: torch.Tensor, pending: list[torch.Tensor], start: int
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """h: the residual stream; pending: block outputs not yet added (the next norm adds
        them, as a fused add + norm kernel does). Returns the stream and this block's outputs."""
        scope, norm = self.ctx.scope, self.ctx.backend.norm
        with scope("norm.attn"):
            for p in pending:
                h = h + p
            a_in = norm(h, self.norm_attn)
        a = self.attn(a_in, start)
        if not self.ctx.spec.parallel_block:
            with scope("norm.mlp"):
                h = h + a
                m_in = norm(h, self.norm_mlp)
            return h, [self.mlp(m_in)]
        m_in = a_in
        if self.norm_mlp is not None:  # GPT-NeoX: ln2 on the same input
            with scope("norm.mlp"):
                m_in = norm(h, self.norm_mlp)
        return h, [a, self.mlp(m_in)]


class Decoder(nn.Module):
    """`n_layers` (default: the spec's) decoder layers for `batch` sequences of up to
    `capacity` positions. Call `init_weights()` for random weights (parameters start empty)."""

    def __init__(
        self,
        spec: ModelSpec,
        *,
        n_layers: int | None = None,
        batch: int = 1,
        capacity: int = 2048,
        dtype: torch.dtype = torch.float32,
        device: str = "cpu",
        backend: TorchBackend | None = None,
    ):
        super().__init__()
        check_supported(spec)
        if spec.positional == "learned" and capacity > spec.max_position_embeddings:
            raise RooflensError(
                f"{spec.id} has {spec.max_position_embeddings} learned positions; "
                f"{capacity} were asked for: use a shorter --context"
            )
        self.ctx = ctx = Ctx(spec, backend or TorchBackend(), dtype, device)
        D, V = spec.d_model, spec.vocab_size
        self.embed = nn.Embedding(V, D, **ctx.kw)  # type: ignore[arg-type]
        self.positions = None
        if spec.positional == "learned":
            self.positions = nn.Embedding(spec.max_position_embeddings, D, **ctx.kw)  # type: ignore[arg-type]
        rope = Rope(spec.head_dim, capacity, ctx) if spec.positional == "rope" else None
        self.rope = rope
        depth = spec.n_layers if n_layers is None else n_layers
        self.layers = nn.ModuleList(
            Layer(ctx, batch, capacity, rope, spec.is_moe and i >= spec.first_dense_layers)
            for i in range(depth)
        )
        self.norm_final = ctx.norm()
        lm_bias = spec.linear_bias and spec.family == "phi"  # model/params.py: Phi's head bias
        self.lm_head = ctx.linear(D, V, lm_bias)
        if spec.tied_embeddings:
            self.lm_head.weight = self.embed.weight

    @property
    def scopes(self) -> Scopes:
        return self.ctx.scope

    @torch.no_grad()
    def init_weights(self, seed: int = 0) -> Decoder:
        """Random weights N(0, INIT_STD²) in the decoder's dtype; norms at 1, biases at 0."""
        generator = torch.Generator(device=self.ctx.kw["device"]).manual_seed(seed)  # type: ignore[arg-type]
        for name, p in self.named_parameters():
            if p.ndim == 1:  # norm weights and biases
                p.fill_(1.0 if "norm" in name and name.endswith("weight") else 0.0)
            else:
                p.normal_(0.0, INIT_STD, generator=generator)
        return self

    def forward(
        self,
        tokens: torch.Tensor,
        start: int,
        all_logits: bool = False,
        rows: slice | None = None,
    ) -> torch.Tensor:
        """Logits [B, T or 1, V] of tokens [B, T] at positions start..start+T−1, whose K and V
        join the cache; prefill (start = 0) returns the last position's only by default.
        `rows`: the cache rows these B sequences are (a chunk of the batch; default all)."""
        scope, backend = self.ctx.scope, self.ctx.backend
        self.ctx.rows = slice(None) if rows is None else rows
        T = tokens.shape[1]
        with scope("embed"):
            h = self.embed(tokens)
            if self.positions is not None:
                h = h + self.positions(torch.arange(start, start + T, device=tokens.device))
        pending: list[torch.Tensor] = []
        for layer in self.layers:
            h, pending = layer(h, pending, start)
        with scope("norm.final"):
            for p in pending:
                h = h + p
            h = backend.norm(h, self.norm_final)
        with scope("lm_head"):
            return backend.linear(h if all_logits else h[:, -1:], self.lm_head)


def check_supported(spec: ModelSpec) -> None:
    """One-line errors for what this decoder does not build."""
    if spec.attention == "mla":
        raise RooflensError(
            f"{spec.id} uses MLA attention, which `validate e2e` does not build "
            "yet: pick a MHA/GQA/MQA model"
        )
    if spec.positional == "alibi":
        raise RooflensError(f"{spec.id} uses ALiBi positions, which `validate e2e` does not build")
    if spec.activation not in ACTIVATIONS:
        known = ", ".join(ACTIVATIONS)
        raise RooflensError(f"{spec.id}'s activation '{spec.activation}' is not one of {known}")
