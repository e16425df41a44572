"""HF config.json -> ModelSpec fields: GptOssForCausalLM, checked against modeling_gpt_oss.py.
The defaults of the matching `transformers` config class apply where a key may be absent
(model/specs/hf_import.py holds the registry)."""

from __future__ import annotations

from typing import Any

from rooflens.model.specs.hf_config import Config, attention_kind, common, layer_types


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
