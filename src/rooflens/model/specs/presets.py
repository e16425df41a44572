"""Model presets: one YAML data file per model beside this module, each number sourced."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from rooflens.hardware.errors import unknown_name_error
from rooflens.hardware.presets import check_readable, files_restricted, read_data_file
from rooflens.model.specs.hf_import import from_hf_config
from rooflens.model.specs.spec import ModelSpec, model_from_dict

PRESET_DIR = Path(__file__).parent / "presets"


@cache
def _model_presets() -> dict[str, ModelSpec]:
    specs = {}
    for path in sorted(PRESET_DIR.glob("*.yaml")):
        spec = model_from_dict(read_data_file(path), path.name)
        specs[spec.id] = spec
    return specs


def model_ids() -> list[str]:
    return list(_model_presets())


def get_model(name: str) -> ModelSpec:
    """A preset id (`llama-3-70b`), a rooflens spec file (.yaml/.json), or a HF config.json."""
    presets = _model_presets()
    if name in presets:
        return presets[name]
    path = Path(name)
    looks_like_file = "/" in name or "\\" in name or path.suffix in (".json", ".yaml", ".yml")
    if files_restricted() and not looks_like_file:
        raise unknown_name_error("model", name, list(presets))
    check_readable(path)  # before any look at the file system: a server reveals nothing
    if path.is_dir() and (path / "config.json").is_file():
        path = path / "config.json"
    if path.suffix in (".json", ".yaml", ".yml") or "/" in name:
        data = read_data_file(path)  # once: a pipe (/dev/stdin) cannot be read twice
        if path.name == "config.json" or "architectures" in data or "model_type" in data:
            return from_hf_config(path, data)
        return model_from_dict(data, name)
    raise unknown_name_error("model", name, list(presets))
