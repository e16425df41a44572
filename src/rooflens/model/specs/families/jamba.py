"""HF config.json -> ModelSpec fields: JambaForCausalLM (attention, Mamba and MoE layers). The
defaults of the matching `transformers` config class apply where a key may be absent
(model/specs/hf_import.py holds the registry)."""

from __future__ import annotations

from typing import Any

from rooflens.model.specs.hf_config import Config, attention_kind, common


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
