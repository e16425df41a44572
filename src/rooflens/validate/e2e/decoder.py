"""A runnable decoder in plain torch, built from a ModelSpec, for `rooflens validate e2e`.

Its layout is the operator table's (model/ops/table.py), so each region of the forward runs under a
`torch.profiler.record_function` scope named after the prediction's operator: `embed`,
`norm.attn` (the residual add fused in, as the table prices it), `attn.qkv_proj` (one fused QKV
GEMM: the parameters of separate q, k, v), `attn.qk_norm`, `attn.rope`, `attn.core` (KV-cache
write and attention), `attn.o_proj`, `norm.post_attn`, `norm.mlp`, `mlp.up_gate` (gate and up as
one GEMM), `mlp.act`, `mlp.down`, `moe.router`, `moe.experts`, `moe.shared.*`, `norm.post_mlp`,
`norm.final`, `lm_head` (last position only in prefill, DESIGN.md); `vision.*` for a
vision-language model's encoder (validate/e2e/vision.py). Scopes cost a little host time, so
they are on only while profiling. The blocks are validate/e2e/blocks.py's, the shared
context and RoPE validate/e2e/ctx.py's.

Covers RMSNorm/LayerNorm, RoPE or learned positions, MHA/GQA/MQA, q/k norms (Qwen3, Gemma 3),
per-layer sliding windows (gpt-oss, Gemma 3, Mistral), attention sinks (gpt-oss), gated or plain
MLPs (silu, gelu, relu), biases, parallel blocks (GPT-J/NeoX/Phi), Gemma 3's four norms per
block and √D embedding scale, tied or untied lm_head, and MoE with a top-k softmax router
(Mixtral, Qwen3-MoE, gpt-oss). validate/e2e/layout.py refuses the rest (MLA, ALiBi, Mamba). The
KV cache is static: [B, K, capacity, Dh] per layer, allocated once, written in place
(graph-capturable); sliding layers keep every position and mask the window.
"""

from __future__ import annotations

import torch
from torch import nn

from rooflens.hardware.errors import RooflensError
from rooflens.model.specs.params import norms_per_block
from rooflens.model.specs.spec import ModelSpec
from rooflens.validate.e2e.backend import TorchBackend
from rooflens.validate.e2e.blocks import MLP, Attention, MoE
from rooflens.validate.e2e.ctx import Ctx, Rope
from rooflens.validate.e2e.layout import check_supported, with_layers
from rooflens.validate.e2e.scopes import Scopes
from rooflens.validate.e2e.vision import VisionEncoder

INIT_STD = 0.02  # GPT-2's initializer_range: keeps random activations finite in bf16


class Layer(nn.Module):
    def __init__(
        self, ctx: Ctx, batch: int, capacity: int, rope: Rope | None, moe: bool, window: int
    ):
        super().__init__()
        m, self.ctx = ctx.spec, ctx
        self.norm_attn = ctx.norm()
        self.attn = Attention(ctx, batch, capacity, rope, window)
        norms = norms_per_block(m)
        self.norm_mlp = ctx.norm() if norms >= 2 else None
        # Gemma 3 (HF Gemma3DecoderLayer): post_attention and post_feedforward norms on each
        # sublayer's output before its residual add
        self.norm_post_attn = ctx.norm() if norms == 4 else None
        self.norm_post_mlp = ctx.norm() if norms == 4 else None
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
        if self.norm_post_attn is not None:
            with scope("norm.post_attn"):
                a = norm(a, self.norm_post_attn)
        if not self.ctx.spec.parallel_block:
            with scope("norm.mlp"):
                h = h + a
                m_in = norm(h, self.norm_mlp)
            out = self.mlp(m_in)
            if self.norm_post_mlp is not None:
                with scope("norm.post_mlp"):
                    out = norm(out, self.norm_post_mlp)
            return h, [out]
        m_in = a_in
        if self.norm_mlp is not None:  # GPT-NeoX: ln2 on the same input
            with scope("norm.mlp"):
                m_in = norm(h, self.norm_mlp)
        return h, [a, self.mlp(m_in)]


class Decoder(nn.Module):
    """`n_layers` (default: the spec's; layout.with_layers picks which) decoder layers for
    `batch` sequences of up to `capacity` positions, and a vision-language model's encoder.
    Call `init_weights()` for random weights (parameters start empty)."""

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
        spec = with_layers(spec, spec.n_layers if n_layers is None else n_layers)
        self.ctx = ctx = Ctx(spec, backend or TorchBackend(), dtype, device)
        D, V = spec.d_model, spec.vocab_size
        self.embed = nn.Embedding(V, D, **ctx.kw)  # type: ignore[arg-type]
        # Gemma 3 multiplies embeddings by √D (HF Gemma3TextScaledWordEmbedding)
        self.embed_scale = D**0.5 if spec.family == "gemma3" else 1.0
        self.positions = None
        if spec.positional == "learned":
            self.positions = nn.Embedding(spec.max_position_embeddings, D, **ctx.kw)  # type: ignore[arg-type]
        rope = Rope(spec.head_dim, capacity, ctx) if spec.positional == "rope" else None
        self.rope = rope
        kinds = spec.layer_types or ("sliding" if spec.sliding_window else "full",) * spec.n_layers
        self.layers = nn.ModuleList(
            Layer(
                ctx,
                batch,
                capacity,
                rope,
                spec.is_moe and i >= spec.first_dense_layers,
                spec.sliding_window if kind == "sliding" else 0,
            )
            for i, kind in enumerate(kinds)
        )
        self.norm_final = ctx.norm()
        lm_bias = (
            spec.linear_bias and spec.family == "phi"
        )  # model/specs/params.py: Phi's head bias
        self.lm_head = ctx.linear(D, V, lm_bias)
        if spec.tied_embeddings:
            self.lm_head.weight = self.embed.weight
        self.vision = VisionEncoder(spec.vision, ctx) if spec.vision else None

    @property
    def scopes(self) -> Scopes:
        return self.ctx.scope

    @torch.no_grad()
    def init_weights(self, seed: int = 0) -> Decoder:
        """Random weights N(0, INIT_STD²) in the decoder's dtype; norms at 1, biases at 0,
        attention sinks N(0, 1) (a logit, like a score)."""
        generator = torch.Generator(device=self.ctx.kw["device"]).manual_seed(seed)  # type: ignore[arg-type]
        for name, p in self.named_parameters():
            if name.endswith("sinks"):
                p.normal_(0.0, 1.0, generator=generator)
            elif p.ndim == 1:  # norm weights and biases
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
        pixels: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits [B, T or 1, V] of tokens [B, T] at positions start..start+T−1, whose K and V
        join the cache; prefill (start = 0) returns the last position's only by default.
        `rows`: the cache rows these B sequences are (a chunk of the batch; default all).
        `pixels` [B, n, C, S, S]: n images per sequence, whose tokens take the prompt's first
        n · tokens_per_image positions (a vision-language model's prefill)."""
        scope, backend = self.ctx.scope, self.ctx.backend
        self.ctx.rows = slice(None) if rows is None else rows
        T = tokens.shape[1]
        images = None
        if pixels is not None:
            if self.vision is None:
                raise RooflensError(f"{self.ctx.spec.id} has no vision encoder: pass no images")
            images = self.vision(pixels.flatten(0, 1))  # [B·n, T_img, D]
            images = images.view(pixels.shape[0], -1, self.ctx.spec.d_model)
        with scope("embed"):
            h = self.embed(tokens)
            if self.embed_scale != 1.0:
                h = h * self.embed_scale
            if images is not None:
                h = torch.cat((images, h[:, images.shape[1] :]), dim=1)
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
