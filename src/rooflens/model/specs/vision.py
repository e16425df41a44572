"""The vision encoder of a vision-language model: a ViT (SigLIP in Gemma 3) whose patch
embeddings go through a projector into the language model as image tokens, with its parameter
count. Its cost at prefill is model/ops/vision.py's.

Image tokens count as prompt tokens of the language model (Gemma 3 report §2.1: each image
becomes 256 soft tokens after average pooling of SigLIP's 64 × 64 patch grid).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class VisionSpec(BaseModel):
    """A ViT encoder (pre-LayerNorm, biased linears, GELU MLP, learned positions) and its
    projector into the language model's width."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_layers: int = Field(gt=0, description="encoder layers")
    d_model: int = Field(gt=0, description="encoder hidden size (Dv)")
    d_ff: int = Field(gt=0, description="encoder MLP width (Fv)")
    n_heads: int = Field(gt=0, description="encoder attention heads")
    patch_size: int = Field(gt=0, description="square patch side, pixels")
    image_size: int = Field(gt=0, description="square input side, pixels (after resizing)")
    tokens_per_image: int = Field(gt=0, description="image tokens the projector hands the LM")
    channels: int = Field(default=3, gt=0, description="input channels")

    @model_validator(mode="after")
    def _check(self) -> VisionSpec:
        if self.d_model % self.n_heads:
            raise ValueError(f"vision n_heads ({self.n_heads}) must divide d_model")
        if self.image_size % self.patch_size:
            raise ValueError("vision patch_size must divide image_size")
        if self.tokens_per_image > self.patches:
            raise ValueError("vision tokens_per_image cannot exceed the patches per image")
        return self

    @property
    def patches(self) -> int:
        """Patches per image, (image / patch)²: 4096 for SigLIP at 896 px, patch 14."""
        return (self.image_size // self.patch_size) ** 2

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def vision_params(v: VisionSpec, lm_width: int) -> int:
    """Encoder + projector parameters (HF SiglipVisionModel and Gemma3MultiModalProjector):
    patch Conv2d (C·p²·Dv + Dv), position table (patches·Dv), per layer two LayerNorms (2·2Dv),
    q/k/v/o with bias (4·(Dv² + Dv)), fc1/fc2 with bias (2·Dv·Fv + Fv + Dv), a final
    LayerNorm (2Dv); projector RMSNorm (Dv) and Dv × D matrix."""
    D, F = v.d_model, v.d_ff
    layer = 2 * 2 * D + 4 * (D * D + D) + 2 * D * F + F + D
    encoder = v.channels * v.patch_size**2 * D + D + v.patches * D + v.n_layers * layer + 2 * D
    return encoder + D + D * lm_width
