"""HF config.json -> ModelSpec fields: Llama-like families: LlamaForCausalLM,
MistralForCausalLM, MixtralForCausalLM and Qwen2ForCausalLM (and the Llama-shaped part of Qwen3,
qwen3.py). The defaults of the matching `transformers` config class apply where a key may be
absent (model/specs/hf_import.py holds the registry)."""

from __future__ import annotations

from typing import Any

from rooflens.model.specs.hf_config import Config, attention_kind, common


def llama_like(cfg: Config, family: str) -> dict[str, Any]:
    """LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM, Qwen2ForCausalLM, and the
    Llama-shaped part of Qwen3 (families/qwen3.py adds what Qwen3 changes)."""
    fields = common(cfg)
    H, D = fields["n_heads"], fields["d_model"]
    K = cfg.get_int("num_key_value_heads", H)
    F = cfg.get_int("intermediate_size")
    fields |= {
        "family": family,
        "n_kv_heads": K,
        "head_dim": cfg.get_int("head_dim", D // H),
        "d_ff": F,
        "gated_mlp": True,
        "activation": cfg.activation("hidden_act", "silu"),
        "tied_embeddings": cfg.get_bool("tie_word_embeddings", False),
        "norm": "rmsnorm",
        "positional": "rope",
        "attention": attention_kind(H, K),
    }
    # Llama's attention_bias covers q, k, v and o; mlp_bias the three MLP matrices.
    attn_bias, mlp_bias = cfg.get_bool("attention_bias", False), cfg.get_bool("mlp_bias", False)
    if attn_bias != mlp_bias:
        raise cfg.refuse("attention_bias", "differs from mlp_bias (bias on only part of the layer)")
    fields["linear_bias"] = attn_bias
    if family == "qwen2":
        fields["qkv_bias"] = True  # Qwen2Attention: q/k/v Linear(bias=True), o_proj without
    if family in ("qwen2", "qwen3", "qwen3-moe"):
        window = _qwen2_window(cfg, fields["n_layers"])
    else:
        window = cfg.get_int("sliding_window", 0)
    fields["sliding_window"] = window if window < fields["max_context"] else 0
    if family == "mixtral":
        fields |= {
            "n_experts": cfg.get_int("num_local_experts"),
            "experts_per_token": cfg.get_int("num_experts_per_tok"),
            "d_ff_expert": F,  # every layer is MoE; each expert is a SwiGLU of width F
        }
    return fields


def _qwen2_window(cfg: Config, n_layers: int) -> int:
    """Qwen2Config (and Qwen3's): layers from max_window_layers on use the window, if
    use_sliding_window."""
    if not cfg.get_bool("use_sliding_window", False):
        return 0
    full_layers = cfg.get_int("max_window_layers", n_layers)
    if full_layers >= n_layers:
        return 0
    if full_layers > 0:
        raise cfg.refuse(
            "max_window_layers", "with use_sliding_window puts a window on only some layers"
        )
    return cfg.get_int("sliding_window")
