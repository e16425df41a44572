"""HF config.json -> ModelSpec fields: Qwen3ForCausalLM and Qwen3MoeForCausalLM, checked against
modeling_qwen3.py and modeling_qwen3_moe.py. The defaults of the matching `transformers` config
class apply where a key may be absent (model/specs/hf_import.py holds the registry)."""

from __future__ import annotations

from typing import Any

from rooflens.model.specs.families.llama import llama_like
from rooflens.model.specs.hf_config import Config


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
