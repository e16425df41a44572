"""HF config.json -> ModelSpec fields for the 2025 families: Qwen3 (dense and MoE), gpt-oss and
Gemma 3 (text), each checked against its `transformers` config class defaults and module tree
(modeling_qwen3.py, modeling_qwen3_moe.py, modeling_gpt_oss.py, modeling_gemma3.py).
"""

from __future__ import annotations

from typing import Any

from rooflens.model.specs.hf_config import Config, attention_kind, common, described
from rooflens.model.specs.hf_families import llama_like

# HF `layer_types` entries -> the spec's LayerType.
_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding"}


def layer_types(cfg: Config, n_layers: int) -> tuple[str, ...]:
    """Per-layer attention from `layer_types` (transformers >= 4.54 writes it for gpt-oss,
    Gemma 3 and Qwen3); () when every layer is alike. Unknown kinds are refused."""
    raw = cfg.data.get("layer_types")
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) != n_layers:
        raise cfg.refuse("layer_types", f"is not a list of {n_layers} layer kinds")
    unknown = sum(1 for k in raw if not isinstance(k, str) or k not in _LAYER_TYPES)
    if unknown:
        raise cfg.refuse("layer_types", f"has {unknown} layer kind(s) other than "
                         f"{', '.join(_LAYER_TYPES)}")  # fmt: skip
    kinds = tuple(_LAYER_TYPES[k] for k in raw)
    return () if len(set(kinds)) == 1 and kinds[0] == "full" else kinds


def qwen3(cfg: Config) -> dict[str, Any]:
    """Qwen3ForCausalLM: Llama-shaped with q_norm/k_norm (RMSNorm over head_dim) and an
    explicit head_dim (128 for every size, so H·Dh may differ from hidden_size)."""
    return llama_like(cfg, "qwen3") | {"qk_norm": True}


def qwen3_moe(cfg: Config) -> dict[str, Any]:
    """Qwen3MoeForCausalLM: Qwen3 attention; every layer a Qwen3MoeSparseMoeBlock (router
    Linear(D, E, bias=False), E SwiGLU experts of moe_intermediate_size, no shared expert)."""
    if cfg.get_int("decoder_sparse_step", 1) != 1:
        raise cfg.refuse("decoder_sparse_step", "puts experts on only every n-th layer")
    if cfg.data.get("mlp_only_layers"):
        raise cfg.refuse("mlp_only_layers", "keeps dense MLPs on some layers")
    fields = llama_like(cfg, "qwen3-moe") | {"qk_norm": True}
    return fields | {
        "n_experts": cfg.get_int("num_experts", minimum=1),
        "experts_per_token": cfg.get_int("num_experts_per_tok", minimum=1),
        "d_ff_expert": cfg.get_int("moe_intermediate_size", minimum=1),
    }


def gpt_oss(cfg: Config) -> dict[str, Any]:
    """GptOssForCausalLM: GQA with biases on q/k/v/o and a learned sink logit per head,
    alternating sliding-window (128) and full layers, every layer an MoE of
    num_local_experts gated experts (biased gate_up and down) behind a biased router; RMSNorm,
    untied embeddings. Its clamped SwiGLU costs what SwiGLU costs."""
    fields = common(cfg)
    H = fields["n_heads"]
    K = cfg.get_int("num_key_value_heads", H)
    F = cfg.get_int("intermediate_size", minimum=1)
    kinds = layer_types(cfg, fields["n_layers"])
    if not cfg.get_bool("attention_bias", True):
        raise cfg.refuse("attention_bias", "drops the attention biases gpt-oss is built with")
    return fields | {
        "family": "gpt-oss",
        "n_kv_heads": K,
        "head_dim": cfg.get_int("head_dim", fields["d_model"] // H),
        "d_ff": F,
        "gated_mlp": True,
        "activation": "silu",
        "tied_embeddings": cfg.get_bool("tie_word_embeddings", False),
        "norm": "rmsnorm",
        "positional": "rope",
        "linear_bias": True,
        "attention": attention_kind(H, K),
        "attention_sinks": True,
        "sliding_window": cfg.get_int("sliding_window", 0) if "sliding" in kinds else 0,
        "layer_types": kinds,
        "n_experts": cfg.get_int("num_local_experts", minimum=1),
        "experts_per_token": cfg.get_int("num_experts_per_tok", minimum=1),
        "d_ff_expert": F,
    }


def gemma3_text(cfg: Config) -> dict[str, Any]:
    """Gemma3ForCausalLM, or the `text_config` of Gemma3ForConditionalGeneration: GQA with
    q_norm/k_norm, four RMSNorms per layer, GeGLU, tied embeddings, and local (sliding) layers
    with a global one every `sliding_window_pattern` (6: five local, one global; Gemma 3
    report §2.1) unless `layer_types` lists them. Defaults are Gemma3TextConfig's."""
    n_layers = cfg.get_layers(26)
    H = cfg.get_int("num_attention_heads", 8)
    K = cfg.get_int("num_key_value_heads", 4)
    kinds = layer_types(cfg, n_layers)
    if not kinds and "layer_types" not in cfg.data:
        pattern = cfg.get_int("sliding_window_pattern", 6, minimum=1)
        kinds = tuple("full" if (i + 1) % pattern == 0 else "sliding" for i in range(n_layers))
    if cfg.get_bool("attention_bias", False):
        raise cfg.refuse("attention_bias", "adds attention biases Gemma 3 does not have")
    window = cfg.get_int("sliding_window", 4096)
    return {
        "family": "gemma3",
        "n_layers": n_layers,
        "d_model": cfg.get_int("hidden_size", 2304),
        "n_heads": H,
        "n_kv_heads": K,
        "head_dim": cfg.get_int("head_dim", 256),
        "d_ff": cfg.get_int("intermediate_size", 9216),
        "gated_mlp": True,
        "activation": cfg.activation("hidden_activation", "gelu_pytorch_tanh"),
        "vocab_size": cfg.get_int("vocab_size", 262_208),
        "tied_embeddings": cfg.get_bool("tie_word_embeddings", True),
        "norm": "rmsnorm",
        "positional": "rope",
        "attention": attention_kind(H, K),
        "qk_norm": True,
        "sliding_window": window if "sliding" in kinds else 0,
        "layer_types": kinds if "full" in kinds and "sliding" in kinds else (),
        "max_context": cfg.get_int("max_position_embeddings", 131_072),
    }


def _section(cfg: Config, key: str) -> Config:
    """A nested config object (Gemma 3's text_config, vision_config), or a one-line refusal."""
    value = cfg.data.get(key)
    if not isinstance(value, dict):
        raise cfg.fail(key, f"must be an object of settings, got {described(value)}")
    return Config(value, cfg.path, cfg.architecture)


def gemma3_vlm(cfg: Config) -> dict[str, Any]:
    """Gemma3ForConditionalGeneration: the Gemma 3 language model (`text_config`) and a SigLIP
    vision tower (`vision_config`, SiglipVisionConfig defaults) whose 64 × 64 patch grid is
    average-pooled to `mm_tokens_per_image` (256) soft tokens per image (Gemma 3 report §2.1)."""
    text, v = (_section(cfg, key) for key in ("text_config", "vision_config"))
    fields = gemma3_text(text)
    fields["vision"] = {
        "n_layers": v.get_layers(12),
        "d_model": v.get_int("hidden_size", 768),
        "d_ff": v.get_int("intermediate_size", 3072),
        "n_heads": v.get_int("num_attention_heads", 12, minimum=1),
        "patch_size": v.get_int("patch_size", 16, minimum=1),
        "image_size": v.get_int("image_size", 224, minimum=1),
        "channels": v.get_int("num_channels", 3, minimum=1),
        "tokens_per_image": cfg.get_int("mm_tokens_per_image", 256, minimum=1),
    }
    return fields


def jamba(cfg: Config) -> dict[str, Any]:
    """JambaForCausalLM (Lieber et al. 2024, "Jamba", §2): Mamba layers with an attention
    layer every attn_layer_period (from attn_layer_offset) and experts on every
    expert_layer_period-th layer; GQA without positional encoding, SwiGLU experts and MLPs,
    RMSNorm, untied embeddings. Mamba mixers: conv1d with bias, in/out projections without."""
    fields = common(cfg)
    L, H = fields["n_layers"], fields["n_heads"]
    K = cfg.get_int("num_key_value_heads", H)
    period = cfg.get_int("attn_layer_period", 8, minimum=1)
    offset = cfg.get_int("attn_layer_offset", 4)
    if cfg.get_bool("mamba_proj_bias", False):
        raise cfg.refuse("mamba_proj_bias", "adds in/out projection biases to the Mamba mixers")
    if not cfg.get_bool("mamba_conv_bias", True):
        raise cfg.refuse("mamba_conv_bias", "drops the conv1d bias")
    kinds = tuple("full" if i % period == offset else "mamba" for i in range(L))
    D = fields["d_model"]
    return fields | {
        "family": "jamba",
        "n_kv_heads": K,
        "head_dim": D // H,
        "d_ff": cfg.get_int("intermediate_size"),
        "gated_mlp": True,
        "activation": cfg.activation("hidden_act", "silu"),
        "tied_embeddings": cfg.get_bool("tie_word_embeddings", False),
        "norm": "rmsnorm",
        "positional": "none",  # Jamba §2: the Mamba layers carry position; no RoPE
        "attention": attention_kind(H, K),
        "layer_types": kinds,
        "n_experts": cfg.get_int("num_experts", 16, minimum=1),
        "experts_per_token": cfg.get_int("num_experts_per_tok", 2, minimum=1),
        "d_ff_expert": cfg.get_int("intermediate_size"),
        "expert_layer_period": cfg.get_int("expert_layer_period", 2, minimum=1),
        "expert_layer_offset": cfg.get_int("expert_layer_offset", 1),
        "ssm_state_size": cfg.get_int("mamba_d_state", 16, minimum=1),
        "ssm_conv_kernel": cfg.get_int("mamba_d_conv", 4, minimum=1),
        "ssm_expand": cfg.get_int("mamba_expand", 2, minimum=1),
        "ssm_dt_rank": cfg.get_int("mamba_dt_rank", -(-D // 16), minimum=1),
    }
