"""HF config.json -> ModelSpec fields: PhiForCausalLM (Phi-1, Phi-1.5, Phi-2). The defaults of
the matching `transformers` config class apply where a key may be absent
(model/specs/hf_import.py holds the registry)."""

from __future__ import annotations

from typing import Any

from rooflens.model.specs.hf_config import Config, attention_kind, common


def phi(cfg: Config) -> dict[str, Any]:
    fields = common(cfg)
    H = fields["n_heads"]
    K = cfg.get_int("num_key_value_heads", H)
    if cfg.get_bool("qk_layernorm", False):
        raise cfg.refuse("qk_layernorm", "adds q/k LayerNorms")
    return fields | {
        "family": "phi",
        "n_kv_heads": K,
        "head_dim": fields["d_model"] // H,  # PhiAttention: hidden_size // num_attention_heads
        "d_ff": cfg.get_int("intermediate_size"),
        "gated_mlp": False,
        "activation": cfg.activation("hidden_act", "gelu_new"),
        "tied_embeddings": cfg.get_bool("tie_word_embeddings", False),
        "norm": "layernorm",
        "positional": "rope",  # partial rotary (partial_rotary_factor) costs the same to us
        "linear_bias": True,
        "parallel_block": True,  # PhiDecoderLayer: one input_layernorm feeds attn and MLP
        "attention": attention_kind(H, K),
    }
