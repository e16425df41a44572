"""HF config.json -> ModelSpec fields: DeepseekV3ForCausalLM (MLA attention, shared and routed
experts). The defaults of the matching `transformers` config class apply where a key may be
absent (model/specs/hf_import.py holds the registry)."""

from __future__ import annotations

from typing import Any

from rooflens.model.specs.hf_config import Config, common


def deepseek_v3(cfg: Config) -> dict[str, Any]:
    fields = common(cfg)
    H = fields["n_heads"]
    if cfg.get_bool("attention_bias", False):
        raise cfg.refuse("attention_bias", "adds MLA projection biases")
    if cfg.get_int("moe_layer_freq", 1) != 1:
        raise cfg.refuse("moe_layer_freq", "puts experts on only every n-th layer")
    n_experts = cfg.get_int("n_routed_experts", 0)
    moe: dict[str, Any] = {}
    if n_experts:
        moe = {
            "n_experts": n_experts,
            "experts_per_token": cfg.get_int("num_experts_per_tok"),
            "n_shared_experts": cfg.get_int("n_shared_experts", 0),
            "d_ff_expert": cfg.get_int("moe_intermediate_size"),
            "first_dense_layers": cfg.get_int("first_k_dense_replace", 0),
        }
    rope = cfg.get_int("qk_rope_head_dim")
    # The multi-token-prediction module (num_nextn_predict_layers) is not part of the main
    # model and is left out, as in the report's 671B total.
    return (
        fields
        | moe
        | {
            "family": "deepseek-v3",
            "n_kv_heads": cfg.get_int("num_key_value_heads", H),
            "head_dim": cfg.get_int("qk_nope_head_dim") + rope,
            "v_head_dim": cfg.get_int("v_head_dim"),
            "q_lora_rank": cfg.get_int("q_lora_rank", 0),
            "kv_lora_rank": cfg.get_int("kv_lora_rank"),
            "qk_rope_head_dim": rope,
            "d_ff": cfg.get_int("intermediate_size"),
            "gated_mlp": True,
            "activation": cfg.activation("hidden_act", "silu"),
            "tied_embeddings": cfg.get_bool("tie_word_embeddings", False),
            "norm": "rmsnorm",
            "positional": "rope",
            "attention": "mla",
        }
    )
