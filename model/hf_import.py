"""Import a Hugging Face `config.json` (a local file; no network) as a ModelSpec.

Owns the mapping from each supported architecture's config keys to ModelSpec fields, with the
defaults of the matching `transformers` config class where a key may be absent. Anything the
spec cannot represent (e.g. OPT-350m's embedding projection) is refused with a one-line error
rather than silently mis-modelled.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hardware.errors import RooflensError
from hardware.presets import read_data_file
from model.presets import model_from_dict
from model.spec import ModelSpec

# HF `hidden_act` / `activation_function` values -> the spec's activation names.
_ACTIVATIONS = {
    "silu": "silu",
    "swish": "silu",
    "gelu": "gelu",
    "gelu_new": "gelu",
    "gelu_fast": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_python": "gelu",
    "relu": "relu",
}


class _Config:
    """Typed, one-line-error access to one parsed config.json."""

    def __init__(self, data: dict[str, Any], path: Path, architecture: str) -> None:
        self.data = data
        self.path = path
        self.architecture = architecture

    def _fail(self, key: str, problem: str) -> RooflensError:
        return RooflensError(f"{self.path}: key '{key}' {problem} ({self.architecture})")

    def get_int(self, key: str, default: int | None = None, minimum: int = 0) -> int:
        """An integer >= minimum; required when `default` is None, else `default` if absent."""
        value = self.data.get(key)
        if value is None:
            if default is None:
                raise self._fail(key, "is missing; it is required")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._fail(key, f"must be an integer, got {type(value).__name__}")
        if value < minimum:
            raise self._fail(key, f"must be at least {minimum}, got {value}")
        return value

    def get_bool(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._fail(key, f"must be true or false, got {type(value).__name__}")
        return value

    def activation(self, key: str, default: str) -> str:
        raw = self.data.get(key) or default
        if not isinstance(raw, str) or raw not in _ACTIVATIONS:
            known = ", ".join(sorted(_ACTIVATIONS))
            raise self._fail(key, f"has an unsupported activation {_quoted(raw)} (known: {known})")
        return _ACTIVATIONS[raw]

    def refuse(self, key: str, why: str) -> RooflensError:
        """A config the spec cannot represent: say which key, its value and why."""
        return self._fail(key, f"= {self.data.get(key)!r} {why}, which rooflens does not model")


def _attention_kind(n_heads: int, n_kv_heads: int) -> str:
    if n_kv_heads == n_heads:
        return "mha"
    return "mqa" if n_kv_heads == 1 else "gqa"


def _common(cfg: _Config) -> dict[str, Any]:
    """Fields every supported family names the same way."""
    return {
        "n_layers": cfg.get_int("num_hidden_layers"),
        "d_model": cfg.get_int("hidden_size"),
        "n_heads": cfg.get_int("num_attention_heads", minimum=1),  # divides hidden_size below
        "vocab_size": cfg.get_int("vocab_size"),
        "max_context": cfg.get_int("max_position_embeddings"),
    }


def _llama_like(cfg: _Config, family: str) -> dict[str, Any]:
    """LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM, Qwen2ForCausalLM."""
    fields = _common(cfg)
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
        "attention": _attention_kind(H, K),
    }
    # Llama's attention_bias covers q, k, v and o; mlp_bias the three MLP matrices.
    attn_bias, mlp_bias = cfg.get_bool("attention_bias", False), cfg.get_bool("mlp_bias", False)
    if attn_bias != mlp_bias:
        raise cfg.refuse("attention_bias", "differs from mlp_bias (bias on only part of the layer)")
    fields["linear_bias"] = attn_bias
    if family == "qwen2":
        fields["qkv_bias"] = True  # Qwen2Attention: q/k/v Linear(bias=True), o_proj without
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


def _qwen2_window(cfg: _Config, n_layers: int) -> int:
    """Qwen2Config: layers from max_window_layers on use the window, if use_sliding_window."""
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


def _opt(cfg: _Config) -> dict[str, Any]:
    fields = _common(cfg)
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


def _gpt_neox(cfg: _Config) -> dict[str, Any]:
    fields = _common(cfg)
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


def _phi(cfg: _Config) -> dict[str, Any]:
    fields = _common(cfg)
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
        "attention": _attention_kind(H, K),
    }


def _deepseek_v3(cfg: _Config) -> dict[str, Any]:
    fields = _common(cfg)
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


_FAMILIES: dict[str, Callable[[_Config], dict[str, Any]]] = {
    "LlamaForCausalLM": lambda cfg: _llama_like(cfg, "llama"),
    "MistralForCausalLM": lambda cfg: _llama_like(cfg, "mistral"),
    "MixtralForCausalLM": lambda cfg: _llama_like(cfg, "mixtral"),
    "Qwen2ForCausalLM": lambda cfg: _llama_like(cfg, "qwen2"),
    "OPTForCausalLM": _opt,
    "GPTNeoXForCausalLM": _gpt_neox,
    "PhiForCausalLM": _phi,
    "DeepseekV3ForCausalLM": _deepseek_v3,
}
# Used when `architectures` is absent: HF model_type -> architecture.
_MODEL_TYPES = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "mixtral": "MixtralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "opt": "OPTForCausalLM",
    "gpt_neox": "GPTNeoXForCausalLM",
    "phi": "PhiForCausalLM",
    "deepseek_v3": "DeepseekV3ForCausalLM",
}
SUPPORTED_ARCHITECTURES = tuple(_FAMILIES)


def _quoted(name: object) -> str:
    """A name from the file, shown only when it looks like a model or activation name (an
    error never echoes arbitrary content of a file, which may be a secret; issue 16)."""
    ok = isinstance(name, str) and re.fullmatch(r"[A-Za-z][A-Za-z0-9_.]{0,40}", name)
    return f"'{name}'" if ok and not re.search(r"\d{4}", str(name)) else "(not shown)"


def _architecture(data: dict[str, Any], path: Path) -> str:
    archs = data.get("architectures")
    if isinstance(archs, list) and archs and all(isinstance(a, str) for a in archs):
        arch = archs[0]
    elif archs is None and isinstance(data.get("model_type"), str):
        arch = _MODEL_TYPES.get(data["model_type"], f"model_type {_quoted(data['model_type'])}")
    elif archs is None:
        raise RooflensError(f"{path}: key 'architectures' (or 'model_type') is missing")
    else:
        raise RooflensError(f"{path}: key 'architectures' must be a list of names")
    if arch not in _FAMILIES:
        shown = arch if arch.startswith("model_type ") else _quoted(arch)
        raise RooflensError(
            f"{path}: unsupported architecture {shown}; supported: {', '.join(_FAMILIES)}"
        )
    return arch


def _slug(text: str) -> str:
    """Lowercase with dashes, keeping dots: 'Llama-3.1-405B' -> 'llama-3.1-405b'."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")


def _display_name(data: dict[str, Any], path: Path) -> str:
    """The model's own name: from `_name_or_path`, else the folder holding config.json."""
    raw = data.get("_name_or_path")
    if isinstance(raw, str) and raw.strip():
        parts = [p for p in re.split(r"[/\\]", raw.strip()) if p]
        # A hub cache path: .../models--org--name/snapshots/<hash>
        cached = [p for p in parts if p.startswith("models--")]
        if cached:
            return cached[-1].split("--")[-1]
        if parts:
            return parts[-1]
    return path.parent.resolve().name if path.name == "config.json" else path.stem


def from_hf_config(path: str | Path) -> ModelSpec:
    """Read a local HF config.json (or a folder holding one) into a ModelSpec."""
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    data = read_data_file(path)  # one-line RooflensError for a missing or malformed file
    arch = _architecture(data, path)
    fields = _FAMILIES[arch](_Config(data, path, arch))
    name = _display_name(data, path)
    fields |= {
        "id": _slug(name) or _slug(arch),
        "name": name,
        "sources": {"config": f"{path} (Hugging Face config.json, {arch})"},
    }
    return model_from_dict(fields, str(path))
