"""HF config.json -> ModelSpec fields: Gemma3ForCausalLM (text) and
Gemma3ForConditionalGeneration (with its vision tower), checked against modeling_gemma3.py. The
defaults of the matching `transformers` config class apply where a key may be absent
(model/specs/hf_import.py holds the registry)."""

from __future__ import annotations

from typing import Any

from rooflens.model.specs.hf_config import Config, attention_kind, described, layer_types


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
