"""Transformer architecture specs: the shape facts the cost model needs, with their sources.

Letters in formulas follow the JAX scaling book: L layers, D = d_model, H query heads,
K kv heads, Dh head dim, F ffn size, V vocab, E experts, k experts per token.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from rooflens.hardware.errors import validated
from rooflens.hardware.spec import Spec
from rooflens.model.specs.dtypes import STORAGE_DTYPES
from rooflens.model.specs.vision import VisionSpec

AttentionKind = Literal["mha", "gqa", "mqa", "mla"]
# What one decoder layer's token mixer is: attention over every position, over the last
# `sliding_window` positions (HF config.json `layer_types` spells them "full_attention" and
# "sliding_attention"), or a Mamba selective state-space mixer with a constant-size state.
LayerType = Literal["full", "sliding", "mamba"]


# 50 times the deepest published decoder (Llama 3.1 405B: 126 layers); per-layer loops and
# tuples (layer_types) stay small. More is a typing slip.
MAX_LAYERS = 10_000


class ModelSpec(Spec):
    """A decoder-only transformer. Frozen; validators enforce the arithmetic that must hold."""

    id: str = Field(
        min_length=1, description="preset id, lowercase with dashes, e.g. 'llama-3-70b'"
    )
    name: str = Field(min_length=1, description="human name, e.g. 'Llama 3 70B'")
    family: str = Field(default="llama", description="architecture family, e.g. llama, opt, gpt")
    n_layers: int = Field(gt=0, le=MAX_LAYERS, description="decoder layers (L)")
    d_model: int = Field(gt=0, description="hidden size (D)")
    n_heads: int = Field(gt=0, description="query heads (H)")
    n_kv_heads: int = Field(gt=0, description="key/value heads (K); = H for MHA, 1 for MQA")
    head_dim: int = Field(gt=0, description="per-head dim (Dh); usually D / H")
    d_ff: int = Field(gt=0, description="dense MLP intermediate size (F)")
    gated_mlp: bool = Field(
        description="SwiGLU/GeGLU (gate and up projections) vs plain 2-matrix MLP"
    )
    activation: Literal["silu", "gelu", "relu"] = Field(
        default="silu", description="MLP activation"
    )
    vocab_size: int = Field(gt=0, description="vocabulary (V)")
    tied_embeddings: bool = Field(default=False, description="lm_head shares the embedding matrix")
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    positional: Literal["rope", "learned", "alibi", "none"] = "rope"
    max_position_embeddings: int = Field(
        default=0,
        ge=0,
        description="rows of a learned position table (0 unless positional=learned)",
    )
    linear_bias: bool = Field(default=False, description="projections and MLP carry bias vectors")
    qkv_bias: bool = Field(default=False, description="only the QKV projection has bias (Qwen2)")
    parallel_block: bool = Field(
        default=False,
        description="attention and MLP read the same input (GPT-J/NeoX/Phi style)",
    )
    attention: AttentionKind = Field(description="mha / gqa / mqa, or mla (DeepSeek latent KV)")
    # MLA (DeepSeek-V2/V3): KV is cached as a compressed latent plus a shared rope key.
    q_lora_rank: int = Field(default=0, ge=0, description="MLA query low-rank dim (0 = full Wq)")
    kv_lora_rank: int = Field(default=0, ge=0, description="MLA latent KV rank (the cached width)")
    qk_rope_head_dim: int = Field(default=0, ge=0, description="MLA decoupled rope key dim")
    v_head_dim: int = Field(default=0, ge=0, description="MLA value head dim (0 = head_dim)")
    # Mixture of experts.
    n_experts: int = Field(
        default=0, ge=0, description="routed experts per MoE layer (E); 0 = dense"
    )
    experts_per_token: int = Field(default=0, ge=0, description="routed experts per token (k)")
    n_shared_experts: int = Field(default=0, ge=0, description="always-on experts per MoE layer")
    d_ff_expert: int = Field(default=0, ge=0, description="each expert's intermediate size")
    first_dense_layers: int = Field(
        default=0,
        ge=0,
        description="leading layers with a dense MLP instead of experts",
    )
    expert_layer_period: int = Field(
        default=1, ge=1, description="every n-th layer (from the offset) has experts (Jamba: 2)"
    )
    expert_layer_offset: int = Field(default=0, ge=0, description="first layer with experts")
    # Mamba (selective SSM) mixers of hybrid models (Gu & Dao 2023; Jamba, Lieber et al. 2024)
    ssm_state_size: int = Field(default=0, ge=0, description="Mamba state per channel (N)")
    ssm_conv_kernel: int = Field(default=0, ge=0, description="Mamba causal conv1d width")
    ssm_expand: int = Field(default=0, ge=0, description="Mamba inner width E = expand · D")
    ssm_dt_rank: int = Field(default=0, ge=0, description="Mamba Δ projection rank (R)")
    sliding_window: int = Field(
        default=0,
        ge=0,
        description="attention window in tokens (0 = full); with layer_types, of the sliding "
        "layers only",
    )
    layer_types: tuple[LayerType, ...] = Field(
        default=(),
        description="each layer's attention, in order (gpt-oss alternates sliding and full, "
        "Gemma 3 has 5 sliding per full); () = every layer alike (sliding iff sliding_window)",
    )
    qk_norm: bool = Field(
        default=False, description="RMSNorm over each q and k head before RoPE (Qwen3, Gemma 3)"
    )
    attention_sinks: bool = Field(
        default=False,
        description="a learned per-head logit joins each softmax (gpt-oss); H parameters",
    )
    max_context: int = Field(gt=0, description="longest supported context, tokens")
    vision: VisionSpec | None = Field(
        default=None, description="vision encoder of a vision-language model (None = text only)"
    )
    native_weight_dtype: str = Field(
        default="bf16",
        description="dtype the released checkpoint stores its linear weights in (the default "
        "--weight-dtype), e.g. fp8 for DeepSeek-V3",
    )
    native_expert_dtype: str = Field(
        default="",
        description="dtype of the routed experts when it differs from the other linear weights "
        "(gpt-oss: mxfp4); '' = native_weight_dtype",
    )
    sources: dict[str, str] = Field(
        default_factory=dict,
        description="field (or 'config') -> where the number comes from",
    )

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads ({self.n_kv_heads}) must divide n_heads ({self.n_heads})")
        expected = {"mha": self.n_heads, "mqa": 1}.get(self.attention)
        if expected is not None and self.n_kv_heads != expected and self.attention != "mla":
            raise ValueError(
                f"attention={self.attention} needs n_kv_heads={expected}, got {self.n_kv_heads}"
            )
        if self.attention == "gqa" and not 1 < self.n_kv_heads < self.n_heads:
            raise ValueError(
                "attention=gqa needs 1 < n_kv_heads < n_heads, "
                f"got {self.n_kv_heads}/{self.n_heads}"
            )
        if self.attention == "mla" and not (self.kv_lora_rank and self.qk_rope_head_dim):
            raise ValueError("attention=mla needs kv_lora_rank and qk_rope_head_dim")
        if self.attention != "mla" and self.d_model % self.n_heads:
            if self.head_dim * self.n_heads != self.d_model and self.family not in _FREE_HEAD_DIM:
                raise ValueError(
                    f"n_heads ({self.n_heads}) must divide d_model ({self.d_model}) "
                    "unless head_dim is given explicitly by the family"
                )
        if self.n_experts:
            if not 0 < self.experts_per_token <= self.n_experts:
                raise ValueError(
                    f"experts_per_token must be in 1..n_experts ({self.n_experts}), "
                    f"got {self.experts_per_token}"
                )
            if not self.d_ff_expert:
                raise ValueError("an MoE model needs d_ff_expert")
            if self.first_dense_layers >= self.n_layers:
                raise ValueError("first_dense_layers must be fewer than n_layers")
        elif self.experts_per_token or self.n_shared_experts:
            raise ValueError("experts_per_token/n_shared_experts need n_experts > 0")
        if self.positional == "learned" and not self.max_position_embeddings:
            raise ValueError("positional=learned needs max_position_embeddings")
        for field in ("native_weight_dtype", "native_expert_dtype"):
            value = getattr(self, field)
            if value and value not in STORAGE_DTYPES:
                raise ValueError(f"{field} '{value}' is not one of {', '.join(STORAGE_DTYPES)}")
        if self.native_expert_dtype and not self.is_moe:
            raise ValueError("native_expert_dtype needs n_experts > 0")
        if self.layer_types:
            if len(self.layer_types) != self.n_layers:
                raise ValueError(
                    f"layer_types lists {len(self.layer_types)} layers, n_layers is {self.n_layers}"
                )
            if "sliding" in self.layer_types and not self.sliding_window:
                raise ValueError("layer_types has sliding layers: give sliding_window")
            if self.attention == "mla":
                raise ValueError("layer_types with attention=mla is not modelled")
            if "mamba" in self.layer_types and not (
                self.ssm_state_size and self.ssm_conv_kernel and self.ssm_expand
                and self.ssm_dt_rank
            ):  # fmt: skip
                raise ValueError(
                    "mamba layers need ssm_state_size, ssm_conv_kernel, ssm_expand, ssm_dt_rank"
                )
            if self.layer_types.count("mamba") == self.n_layers:
                raise ValueError("layer_types needs at least one attention layer")
        if self.sliding_window > self.max_context:
            raise ValueError("sliding_window cannot exceed max_context")
        return self

    # Derived shapes: computed, never stored.
    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def n_moe_layers(self) -> int:
        """Layers with experts: from first_dense_layers on, every expert_layer_period-th
        counting from expert_layer_offset (every layer by default)."""
        if not self.is_moe:
            return 0
        start = max(self.first_dense_layers, self.expert_layer_offset)
        period, offset = self.expert_layer_period, self.expert_layer_offset
        return sum(1 for i in range(start, self.n_layers) if (i - offset) % period == 0)

    @property
    def n_mamba_layers(self) -> int:
        return self.layer_types.count("mamba")

    @property
    def n_attention_layers(self) -> int:
        """Layers whose mixer is attention (all but a hybrid's Mamba layers)."""
        return self.n_layers - self.n_mamba_layers

    @property
    def ssm_inner(self) -> int:
        """Mamba inner width E = expand · D."""
        return self.ssm_expand * self.d_model

    @property
    def window_layers(self) -> dict[int, int]:
        """Attention layers per window, 0 = full attention: {0: L} for Llama, {128: 12, 0: 12}
        for gpt-oss-20b, {0: 4} for Jamba (its 28 Mamba layers hold no KV). Every per-layer
        attention cost (KV held, attention rows) sums over it."""
        if not self.layer_types:
            return {self.sliding_window: self.n_layers}
        counts: dict[int, int] = {}
        for kind in self.layer_types:
            if kind == "mamba":
                continue
            window = self.sliding_window if kind == "sliding" else 0
            counts[window] = counts.get(window, 0) + 1
        return counts

    def with_window(self, window: int) -> ModelSpec:
        """This model with every layer at one window (one entry of window_layers): the
        per-kind view memory and optimizations price a layer kind through."""
        kinds = tuple(
            k if k == "mamba" else "sliding" if window else "full" for k in self.layer_types
        )
        return self.model_copy(update={"sliding_window": window, "layer_types": kinds})

    @property
    def n_dense_layers(self) -> int:
        return self.n_layers - self.n_moe_layers

    @property
    def q_dim(self) -> int:
        """Width of the concatenated query heads (H·Dh)."""
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of one of K or V across kv heads (K·Dh)."""
        return self.n_kv_heads * self.head_dim

    @property
    def value_head_dim(self) -> int:
        return self.v_head_dim or self.head_dim

    @property
    def kv_cache_elements_per_token_per_layer(self) -> int:
        """Cached elements per token per layer: 2·K·Dh, or MLA's latent + rope key."""
        if self.attention == "mla":
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.n_kv_heads * self.head_dim


# Families whose head_dim is set independently of d_model / n_heads.
_FREE_HEAD_DIM = {"gemma", "gemma3", "qwen3", "qwen3-moe", "gpt-oss", "phi", "mistral"}


def model_from_dict(data: dict[str, Any], origin: str) -> ModelSpec:
    """A ModelSpec from plain data (a preset file, a spec file, an imported HF config); a bad
    field is one RooflensError naming `origin` and the field."""
    return validated(ModelSpec, data, f"model spec {origin}")
