"""HF config.json -> ModelSpec fields: GPTNeoXForCausalLM (Pythia, GPT-NeoX-20B). The defaults
of the matching `transformers` config class apply where a key may be absent
(model/specs/hf_import.py holds the registry)."""

from __future__ import annotations

from typing import Any

from rooflens.model.specs.hf_config import Config, common


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
