"""The vision encoder of a vision-language model for the e2e decoder (Gemma 3's SigLIP and its
projector), laid out as model/ops/vision.py prices it and named by its `vision.*` operators.

HF SiglipVisionModel: a patch Conv2d (`vision.patch_embed`, a GEMM over C·p² per patch) plus a
learned position per patch, then pre-LayerNorm layers of bidirectional attention (`vision.qkv_proj`
fused, `vision.attn`, `vision.o_proj`) and a GELU-tanh MLP (`vision.fc1`, `vision.act`,
`vision.fc2`), all with biases, and a final LayerNorm. Gemma3MultiModalProjector average-pools
the patch grid to `tokens_per_image` tokens (`vision.pool`), then RMSNorm and a Dv × D matrix
(`vision.projector`). Its parameters equal model/specs/vision.py's `vision_params`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from rooflens.model.specs.vision import VisionSpec

if TYPE_CHECKING:
    from rooflens.validate.e2e.ctx import Ctx

NORM_EPS = 1e-6  # SiglipVisionConfig layer_norm_eps


class _VisionLayer(nn.Module):
    def __init__(self, v: VisionSpec, ctx: Ctx):
        super().__init__()
        kw, D = ctx.kw, v.d_model
        self.ctx, self.v = ctx, v
        self.norm_attn = nn.LayerNorm(D, eps=NORM_EPS, **kw)  # type: ignore[arg-type]
        self.qkv = ctx.linear(D, 3 * D, bias=True)
        self.o_proj = ctx.linear(D, D, bias=True)
        self.norm_mlp = nn.LayerNorm(D, eps=NORM_EPS, **kw)  # type: ignore[arg-type]
        self.fc1 = ctx.linear(D, v.d_ff, bias=True)
        self.fc2 = ctx.linear(v.d_ff, D, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x [n, Np, Dv]
        scope, backend, v = self.ctx.scope, self.ctx.backend, self.v
        n, Np, D = x.shape
        with scope("vision.norm_attn"):
            a = self.norm_attn(x)
        with scope("vision.qkv_proj"):
            q, k, w = backend.linear(a, self.qkv).view(n, Np, 3, v.n_heads, v.head_dim).unbind(2)
        with scope("vision.attn"):  # every patch sees every patch of its image
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                               w.transpose(1, 2))  # fmt: skip
            o = o.transpose(1, 2).reshape(n, Np, D)
        with scope("vision.o_proj"):
            x = x + backend.linear(o, self.o_proj)
        with scope("vision.norm_mlp"):
            m = self.norm_mlp(x)
        with scope("vision.fc1"):
            m = backend.linear(m, self.fc1)
        with scope("vision.act"):
            m = F.gelu(m, approximate="tanh")
        with scope("vision.fc2"):
            return x + backend.linear(m, self.fc2)


class VisionEncoder(nn.Module):
    """Images [n, C, S, S] -> image tokens [n, tokens_per_image, D] for the language model."""

    def __init__(self, v: VisionSpec, ctx: Ctx):
        super().__init__()
        kw, D = ctx.kw, v.d_model
        self.ctx, self.v = ctx, v
        self.patch_embed = nn.Conv2d(v.channels, D, v.patch_size, stride=v.patch_size, **kw)  # type: ignore[arg-type]
        self.position = nn.Embedding(v.patches, D, **kw)  # type: ignore[arg-type]
        self.layers = nn.ModuleList(_VisionLayer(v, ctx) for _ in range(v.n_layers))
        self.norm_final = nn.LayerNorm(D, eps=NORM_EPS, **kw)  # type: ignore[arg-type]
        self.norm_projector = nn.RMSNorm(D, eps=NORM_EPS, **kw)  # type: ignore[arg-type]
        self.projector = ctx.linear(D, ctx.spec.d_model, bias=False)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        scope, v = self.ctx.scope, self.v
        n = pixels.shape[0]
        with scope("vision.patch_embed"):
            x = self.patch_embed(pixels).flatten(2).transpose(1, 2)  # [n, Np, Dv]
            x = x + self.position.weight
        for layer in self.layers:
            x = layer(x)
        with scope("vision.norm_final"):
            x = self.norm_final(x)
        with scope("vision.pool"):  # the side × side patch grid pooled to √T × √T tokens
            side, out = v.image_size // v.patch_size, math.isqrt(v.tokens_per_image)
            grid = x.transpose(1, 2).reshape(n, v.d_model, side, side)
            x = F.adaptive_avg_pool2d(grid, out).flatten(2).transpose(1, 2)  # [n, T, Dv]
        with scope("vision.projector"):
            return self.ctx.backend.linear(self.norm_projector(x), self.projector)
