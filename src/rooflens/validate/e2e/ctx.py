"""What every module of one e2e decoder shares (`Ctx`: spec, backend, operator scopes, tensor
options, the norms and linears it builds) and its rotary embedding (`Rope`): below the blocks
(validate/e2e/blocks.py, vision.py) and the decoder (decoder.py) that use them.
"""

from __future__ import annotations

import torch
from torch import nn

from rooflens.model.specs.spec import ModelSpec
from rooflens.validate.e2e.backend import TorchBackend
from rooflens.validate.e2e.scopes import Scopes

NORM_EPS = 1e-5
ROPE_THETA = 10000.0  # RoFormer (Su et al. 2021); the base does not change the cost


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

    def head_norm(self) -> nn.Module:
        """RMSNorm over one head's Dh (Qwen3/Gemma 3 q_norm and k_norm)."""
        return nn.RMSNorm(self.spec.head_dim, eps=NORM_EPS, **self.kw)  # type: ignore[arg-type]

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
