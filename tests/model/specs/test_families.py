"""One module per Hugging Face family (model/specs/families/): each maps the public config.json
of its family's checkpoints onto the fields of the preset it must reproduce (the preset files
are the second route, written from the published configs and papers), every module is exercised
by at least one checkpoint, and each module holds only its family's mapping."""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path
from typing import Any

import pytest

import rooflens.model.specs.families as families
from rooflens.model.specs.hf_config import Config
from rooflens.model.specs.presets import get_model

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# module of model/specs/families -> (its mapping, the checkpoints (fixture folder -> preset))
FAMILY_CHECKPOINTS: dict[str, tuple[str, dict[str, str]]] = {
    "llama": ("llama_like", {"Meta-Llama-3-8B": "llama-3-8b", "Mistral-7B-v0.1": "mistral-7b",
                             "Mixtral-8x7B-v0.1": "mixtral-8x7b", "Qwen2.5-7B": "qwen2.5-7b"}),
    "opt": ("opt", {"opt-6.7b": "opt-6.7b"}),
    "gpt_neox": ("gpt_neox", {"gpt-neox-20b": "gpt-neox-20b"}),
    "phi": ("phi", {"phi-2": "phi-2"}),
    "deepseek": ("deepseek_v3", {"DeepSeek-V3": "deepseek-v3"}),
    "qwen3": ("qwen3", {"Qwen3-8B": "qwen3-8b"}),
    "gpt_oss": ("gpt_oss", {"gpt-oss-20b": "gpt-oss-20b"}),
    "gemma3": ("gemma3_text", {"gemma-3-1b-pt": "gemma-3-1b"}),
    "jamba": ("jamba", {"Jamba-v0.1": "jamba-v0.1"}),
}  # fmt: skip
LLAMA_FAMILY = {"Meta-Llama-3-8B": "llama", "Mistral-7B-v0.1": "mistral",
                "Mixtral-8x7B-v0.1": "mixtral", "Qwen2.5-7B": "qwen2"}  # fmt: skip
CASES = [(m, folder, preset) for m, (_, ck) in FAMILY_CHECKPOINTS.items()
         for folder, preset in ck.items()]  # fmt: skip


def test_every_family_module_is_exercised() -> None:
    modules = {m.name for m in pkgutil.iter_modules(families.__path__)}
    assert modules == set(FAMILY_CHECKPOINTS)


@pytest.mark.parametrize(("module", "folder", "preset"), CASES)
def test_a_family_maps_its_checkpoint_onto_the_preset(module: str, folder: str,
                                                      preset: str) -> None:  # fmt: skip
    path = FIXTURES / folder / "config.json"
    data = json.loads(path.read_text())
    mapping = getattr(importlib.import_module(f"{families.__name__}.{module}"),
                      FAMILY_CHECKPOINTS[module][0])  # fmt: skip
    cfg = Config(data, path, data["architectures"][0])
    args: list[Any] = [cfg, LLAMA_FAMILY[folder]] if module == "llama" else [cfg]
    fields = mapping(*args)
    expected = get_model(preset).model_dump()
    wrong = {k: (v, expected[k]) for k, v in fields.items()
             if k in expected and expected[k] != (list(v) if isinstance(v, tuple) else v)
             and expected[k] != v}  # fmt: skip
    assert not wrong, f"{module} on {folder}: (mapped, preset) differ for {wrong}"
    assert {"n_layers", "d_model", "n_heads", "vocab_size"} <= fields.keys()


def test_a_family_refuses_what_it_cannot_model_in_one_line(tmp_path: Path) -> None:
    from rooflens.hardware.errors import RooflensError
    from rooflens.model.specs.families.opt import opt

    data = json.loads((FIXTURES / "opt-350m" / "config.json").read_text())
    cfg = Config(data, tmp_path / "config.json", "OPTForCausalLM")
    with pytest.raises(RooflensError) as err:
        opt(cfg)  # OPT-350m projects its embeddings (word_embed_proj_dim != hidden_size)
    assert "\n" not in str(err.value) and "OPTForCausalLM" in str(err.value)
