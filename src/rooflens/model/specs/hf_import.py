"""Import a Hugging Face `config.json` (a local file; no network) as a ModelSpec.

Owns the registry from each supported architecture to its field mapping (one module per family
under model/specs/families/) and the checkpoint's native dtype (model/specs/hf_config.py).
Anything the spec cannot represent (e.g. OPT-350m's embedding projection) is refused with a
one-line error rather than silently mis-modelled.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import read_data_file
from rooflens.model.specs.families.deepseek import deepseek_v3
from rooflens.model.specs.families.gemma3 import gemma3_text, gemma3_vlm
from rooflens.model.specs.families.gpt_neox import gpt_neox
from rooflens.model.specs.families.gpt_oss import gpt_oss
from rooflens.model.specs.families.jamba import jamba
from rooflens.model.specs.families.llama import llama_like
from rooflens.model.specs.families.opt import opt
from rooflens.model.specs.families.phi import phi
from rooflens.model.specs.families.qwen3 import qwen3, qwen3_moe
from rooflens.model.specs.hf_config import Config, native_dtypes, quoted
from rooflens.model.specs.spec import ModelSpec, model_from_dict

_FAMILIES: dict[str, Callable[[Config], dict[str, Any]]] = {
    "LlamaForCausalLM": lambda cfg: llama_like(cfg, "llama"),
    "MistralForCausalLM": lambda cfg: llama_like(cfg, "mistral"),
    "MixtralForCausalLM": lambda cfg: llama_like(cfg, "mixtral"),
    "Qwen2ForCausalLM": lambda cfg: llama_like(cfg, "qwen2"),
    "OPTForCausalLM": opt,
    "GPTNeoXForCausalLM": gpt_neox,
    "PhiForCausalLM": phi,
    "DeepseekV3ForCausalLM": deepseek_v3,
    "Qwen3ForCausalLM": qwen3,
    "Qwen3MoeForCausalLM": qwen3_moe,
    "GptOssForCausalLM": gpt_oss,
    "Gemma3ForCausalLM": gemma3_text,
    "Gemma3ForConditionalGeneration": gemma3_vlm,
    "JambaForCausalLM": jamba,
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
    "qwen3": "Qwen3ForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
    "gpt_oss": "GptOssForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM",
    "gemma3": "Gemma3ForConditionalGeneration",
    "jamba": "JambaForCausalLM",
}
SUPPORTED_ARCHITECTURES = tuple(_FAMILIES)


def _architecture(data: dict[str, Any], path: Path) -> str:
    archs = data.get("architectures")
    if isinstance(archs, list) and archs and all(isinstance(a, str) for a in archs):
        arch = archs[0]
    elif archs is None and isinstance(data.get("model_type"), str):
        arch = _MODEL_TYPES.get(data["model_type"], f"model_type {quoted(data['model_type'])}")
    elif archs is None:
        raise RooflensError(f"{path}: key 'architectures' (or 'model_type') is missing")
    else:
        raise RooflensError(f"{path}: key 'architectures' must be a list of names")
    if arch not in _FAMILIES:
        shown = arch if arch.startswith("model_type ") else quoted(arch)
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


def from_hf_config(path: str | Path, data: dict[str, Any] | None = None) -> ModelSpec:
    """Read a local HF config.json (or a folder holding one) into a ModelSpec; `data`: its
    content when already read (a pipe such as /dev/stdin reads only once)."""
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    if data is None:
        data = read_data_file(path)  # one-line RooflensError for a missing or malformed file
    arch = _architecture(data, path)
    cfg = Config(data, path, arch)
    fields = _FAMILIES[arch](cfg) | native_dtypes(cfg)
    name = _display_name(data, path)
    fields |= {
        "id": _slug(name) or _slug(arch),
        "name": name,
        "sources": {"config": f"{path} (Hugging Face config.json, {arch})"},
    }
    return model_from_dict(fields, str(path))
