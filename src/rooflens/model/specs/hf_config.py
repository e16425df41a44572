"""Typed access to one parsed Hugging Face `config.json`: one-line errors naming the key, the
activation names, the fields every family names alike, and the checkpoint's native dtype read
from its `quantization_config`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rooflens.hardware.errors import RooflensError
from rooflens.model.specs.spec import MAX_LAYERS

# HF `hidden_act` / `activation_function` values -> the spec's activation names.
ACTIVATIONS = {
    "silu": "silu",
    "swish": "silu",
    "gelu": "gelu",
    "gelu_new": "gelu",
    "gelu_fast": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_python": "gelu",
    "relu": "relu",
}


class Config:
    """Typed, one-line-error access to one parsed config.json."""

    def __init__(self, data: dict[str, Any], path: Path, architecture: str) -> None:
        self.data = data
        self.path = path
        self.architecture = architecture

    def fail(self, key: str, problem: str) -> RooflensError:
        return RooflensError(f"{self.path}: key '{key}' {problem} ({self.architecture})")

    def get_int(
        self, key: str, default: int | None = None, minimum: int = 0, maximum: int | None = None
    ) -> int:
        """An integer in [minimum, maximum]; required when `default` is None, else `default` if
        absent."""
        value = self.data.get(key)
        if value is None:
            if default is None:
                raise self.fail(key, "is missing; it is required")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"must be an integer, got {type(value).__name__}")
        if value < minimum:
            raise self.fail(key, f"must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise self.fail(key, f"must be at most {maximum:,}, got {value:.3g}")
        return value

    def get_layers(self, default: int | None = None) -> int:
        """`num_hidden_layers`, bounded (spec.py MAX_LAYERS) before any per-layer loop."""
        return self.get_int("num_hidden_layers", default, minimum=1, maximum=MAX_LAYERS)

    def get_bool(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, f"must be true or false, got {type(value).__name__}")
        return value

    def activation(self, key: str, default: str) -> str:
        raw = self.data.get(key) or default
        if not isinstance(raw, str) or raw not in ACTIVATIONS:
            known = ", ".join(sorted(ACTIVATIONS))
            raise self.fail(key, f"has an unsupported activation {quoted(raw)} (known: {known})")
        return ACTIVATIONS[raw]

    def refuse(self, key: str, why: str) -> RooflensError:
        """A config the spec cannot represent: say which key, the kind of value it holds (never
        the text of one: a file may hold anything, a token or a password) and why."""
        value = self.data.get(key)
        shown = f"= {value!r}" if isinstance(value, bool | int | float) else f"({described(value)})"
        return self.fail(key, f"{shown} {why}, which rooflens does not model")


def attention_kind(n_heads: int, n_kv_heads: int) -> str:
    if n_kv_heads == n_heads:
        return "mha"
    return "mqa" if n_kv_heads == 1 else "gqa"


def common(cfg: Config) -> dict[str, Any]:
    """Fields every supported family names the same way."""
    return {
        "n_layers": cfg.get_layers(),
        "d_model": cfg.get_int("hidden_size"),
        "n_heads": cfg.get_int("num_attention_heads", minimum=1),  # divides hidden_size below
        "vocab_size": cfg.get_int("vocab_size"),
        "max_context": cfg.get_int("max_position_embeddings"),
    }


def native_dtypes(cfg: Config) -> dict[str, Any]:
    """The checkpoint's stored weight dtype from `quantization_config`, as ModelSpec fields.

    - quant_method fp8 (DeepSeek-V3: e4m3 with 128x128 block scales) -> fp8 weights;
    - quant_method mxfp4 (gpt-oss: MoE expert weights only; attention, router, embeddings and
      lm_head in modules_to_not_convert stay bf16) -> mxfp4 routed experts;
    - modelopt quant_algo NVFP4 (NVIDIA TensorRT Model Optimizer checkpoints) -> nvfp4 weights.
    Anything else keeps the default (bf16): rooflens does not guess at other layouts.
    """
    quant = cfg.data.get("quantization_config")
    if not isinstance(quant, dict):
        return {}
    method = str(quant.get("quant_method", "")).lower()
    if method == "fp8":
        return {"native_weight_dtype": "fp8"}
    if method == "mxfp4":
        return {"native_expert_dtype": "mxfp4"}
    if method == "modelopt" and str(quant.get("quant_algo", "")).upper() == "NVFP4":
        return {"native_weight_dtype": "nvfp4"}
    return {}


def described(value: object) -> str:
    """The kind of a value from a file, never its content: 'a list of 3 items', 'text'."""
    if isinstance(value, list | dict):
        n = len(value)
        noun = "a list" if isinstance(value, list) else "an object"
        return f"{noun} of {n} item{'s' if n != 1 else ''}"
    if isinstance(value, str):
        return "text"
    if value is None:
        return "nothing (absent or null)"
    return "a number" if isinstance(value, int | float) else type(value).__name__


def quoted(name: object) -> str:
    """A name from the file, shown only when it looks like a model or activation name (an
    error never echoes arbitrary content of a file, which may be a secret; issue 16)."""
    ok = isinstance(name, str) and re.fullmatch(r"[A-Za-z][A-Za-z0-9_.]{0,40}", name)
    return f"'{name}'" if ok and not re.search(r"\d{4}", str(name)) else "(not shown)"


# HF `layer_types` entries -> the spec's LayerType.
_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding"}


def layer_types(cfg: Config, n_layers: int) -> tuple[str, ...]:
    """Per-layer attention from `layer_types` (transformers >= 4.54 writes it for gpt-oss,
    Gemma 3 and Qwen3); () when every layer is alike. Unknown kinds are refused."""
    raw = cfg.data.get("layer_types")
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) != n_layers:
        raise cfg.refuse("layer_types", f"is not a list of {n_layers} layer kinds")
    unknown = sum(1 for k in raw if not isinstance(k, str) or k not in _LAYER_TYPES)
    if unknown:
        raise cfg.refuse("layer_types", f"has {unknown} layer kind(s) other than "
                         f"{', '.join(_LAYER_TYPES)}")  # fmt: skip
    kinds = tuple(_LAYER_TYPES[k] for k in raw)
    return () if len(set(kinds)) == 1 and kinds[0] == "full" else kinds
