"""The kernels the e2e decoder's operators call: plain torch, or the project's Triton kernels.

`TorchBackend` is what a careful eager PyTorch server runs: `F.linear` (cuBLAS / MKL), the norm
modules, and `scaled_dot_product_attention` (Flash/efficient kernels on GPUs) with GQA handled by
the kernel (`enable_gqa`), never by copying K and V per query head. `TritonBackend` routes the
operators kernels/ implements (GEMM, RMSNorm, causal prefill attention, decode attention) through
them and falls back to torch for the rest, so one run shows what our kernels buy over torch.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from rooflens.hardware.errors import RooflensError

IMPLS = ("torch", "triton")


class TorchBackend:
    name = "torch"

    def linear(self, x: torch.Tensor, layer: nn.Linear) -> torch.Tensor:
        return F.linear(x, layer.weight, layer.bias)

    def norm(self, x: torch.Tensor, module: nn.Module) -> torch.Tensor:
        return module(x)

    def attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q_start: int, window: int
    ) -> torch.Tensor:
        """Causal attention of queries q [B, H, T, Dh] at positions q_start.. over keys and
        values [B, K, L, Dh] at positions 0..L−1, each query seeing at most `window` keys."""
        T, L = q.shape[2], k.shape[2]
        gqa = q.shape[1] != k.shape[1]
        if not window or L <= window:
            if T == 1:  # one new token sees every cached position
                return F.scaled_dot_product_attention(q, k, v, enable_gqa=gqa)
            if q_start == 0 and T == L:
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
        allowed = causal_mask(q_start, T, L, window, q.device)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=gqa)

    def attend_masked(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor, scale: float
    ) -> torch.Tensor:
        """Attention of q [B, H, T, E] over k [B, K, L, E], v [B, K, L, Ev] where `allowed`
        [T, L] says so, scores scaled by `scale` (attention sinks, validate/e2e/blocks.py)."""
        gqa = q.shape[1] != k.shape[1]
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=allowed, scale=scale, enable_gqa=gqa
        )


def causal_mask(start: int, T: int, L: int, window: int, device: torch.device) -> torch.Tensor:
    """[T, L] bool: the query at position start + i sees key position j (j ≤ start + i, and
    start + i − j < window for a sliding layer, HF's sliding_window semantics)."""
    q_pos = torch.arange(start, start + T, device=device)[:, None]
    k_pos = torch.arange(L, device=device)[None, :]
    allowed = k_pos <= q_pos
    if window:
        allowed = allowed & (k_pos > q_pos - window)
    return allowed


class TritonBackend(TorchBackend):
    """kernels/ for GEMMs, RMSNorm and attention on a CUDA GPU; torch where a kernel's input
    contract does not hold (LayerNorm, sliding windows, head dims the kernels do not take)."""

    name = "triton"
    HEAD_DIMS = (16, 32, 64, 128, 256)

    def __init__(self) -> None:
        from rooflens.kernels import decode_attention, flash_attention, gemm, rmsnorm

        self._gemm, self._rmsnorm = gemm.gemm, rmsnorm
        self._flash, self._decode = flash_attention.flash_attention, decode_attention

    def linear(self, x: torch.Tensor, layer: nn.Linear) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        y = self._gemm(rows if rows.stride(-1) == 1 else rows.contiguous(), layer.weight)
        if layer.bias is not None:
            y = y + layer.bias
        return y.view(*x.shape[:-1], layer.out_features)

    def norm(self, x: torch.Tensor, module: nn.Module) -> torch.Tensor:
        width = x.shape[-1]
        if not isinstance(module, nn.RMSNorm) or width > self._rmsnorm.MAX_HIDDEN:
            return module(x)
        eps = module.eps if module.eps is not None else 1e-6
        out, _ = self._rmsnorm.rmsnorm(x.reshape(-1, width).contiguous(), module.weight, eps=eps)
        return out.view_as(x)

    def attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q_start: int, window: int
    ) -> torch.Tensor:
        T, L, head_dim = q.shape[2], k.shape[2], q.shape[3]
        if (window and L > window) or head_dim not in self.HEAD_DIMS:
            return super().attend(q, k, v, q_start, window)
        if q_start == 0 and T == L:
            return self._flash(q, k, v)
        if T == 1:
            lens = torch.full((q.shape[0],), L, dtype=torch.int32, device=q.device)
            out = self._decode.decode_attention(q[:, :, 0].contiguous(), k, v, lens)
            return out[:, :, None]
        return super().attend(q, k, v, q_start, window)


def make_backend(impl: str, device: str) -> TorchBackend:
    """The backend for `--impl`; Triton needs a CUDA GPU and the triton package."""
    if impl == "torch":
        return TorchBackend()
    if impl != "triton":
        raise RooflensError(f"--impl must be one of {', '.join(IMPLS)}, got '{impl}'")
    if device != "cuda":
        raise RooflensError(
            "--impl triton runs the kernels of kernels/ on a CUDA GPU: use "
            "--device cuda, or --impl torch on the CPU"
        )
    try:
        import triton  # noqa: F401
    except ImportError:
        raise RooflensError("--impl triton needs the triton package: pip install triton") from None
    return TritonBackend()
