"""HF config.json -> ModelSpec fields: OPTForCausalLM. The defaults of the matching `transformers`
config class apply where a key may be absent (model/specs/hf_import.py holds the registry)."""

from __future__ import annotations

from typing import Any

from rooflens.model.specs.hf_config import Config, common


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
