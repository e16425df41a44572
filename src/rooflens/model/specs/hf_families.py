"""HF config.json -> ModelSpec fields for the families rooflens has modelled since its start:
Llama-like (Llama, Mistral, Mixtral, Qwen2), OPT, GPT-NeoX, Phi and DeepSeek-V3; the defaults of
the matching `transformers` config class apply where a key may be absent.
"""

from __future__ import annotations

from typing import Any

from rooflens.model.specs.hf_config import Config, attention_kind, common


def llama_like(cfg: Config, family: str) -> dict[str, Any]:
    """LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM, Qwen2ForCausalLM, and the
    Llama-shaped part of Qwen3 (model/specs/hf_families_2025.py adds what Qwen3 changes)."""
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


def opt(cfg: Config) -> dict[str, Any]:
    fields = common(cfg)
    D = fields["d_model"]
    if cfg.get_int("word_embed_proj_dim", D) != D:
        raise cfg.refuse(
            "word_embed_proj_dim", f"differs from hidden_size {D}: an embedding projection"
        )
    if not cfg.get_bool("layer_norm_elementwise_affine", True):
        raise cfg.refuse("layer_norm_elementwise_affine", "gives norms without weights")
    return fields | {
        "family": "opt",
        "n_kv_heads": fields["n_heads"],
        "head_dim": D // fields["n_heads"],
        "d_ff": cfg.get_int("ffn_dim"),
        "gated_mlp": False,
        "activation": cfg.activation("activation_function", "relu"),
        "tied_embeddings": cfg.get_bool("tie_word_embeddings", True),  # PretrainedConfig default
        "norm": "layernorm",
        "positional": "learned",
        # OPTLearnedPositionalEmbedding allocates max_position_embeddings + 2 rows (offset 2).
        "max_position_embeddings": fields["max_context"] + 2,
        "linear_bias": cfg.get_bool("enable_bias", True),
        "attention": "mha",
    }


def gpt_neox(cfg: Config) -> dict[str, Any]:
    fields = common(cfg)
    if not cfg.get_bool("attention_bias", True):
        raise cfg.refuse("attention_bias", "drops attention biases while the MLP keeps them")
    return fields | {
        "family": "gpt-neox",
        "n_kv_heads": fields["n_heads"],
        "head_dim": fields["d_model"] // fields["n_heads"],
        "d_ff": cfg.get_int("intermediate_size"),
        "gated_mlp": False,
        "activation": cfg.activation("hidden_act", "gelu"),
        "tied_embeddings": cfg.get_bool("tie_word_embeddings", False),
        "norm": "layernorm",
        "positional": "rope",
        "linear_bias": True,
        "parallel_block": cfg.get_bool("use_parallel_residual", True),
        "attention": "mha",
    }


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
