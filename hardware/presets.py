"""Load GPU and system presets (YAML data files beside this module) and user spec files."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from hardware.errors import RooflensError, unknown_name_error, validation_message
from hardware.spec import GPUSpec, LinkSpec, SystemSpec

PRESET_DIR = Path(__file__).parent / "presets"
GPU_DIR = PRESET_DIR / "gpus"
LINK_FILE = PRESET_DIR / "links.yaml"


def read_data_file(path: Path) -> dict[str, Any]:
    """Parse a JSON or YAML file into a dict, with a one-line error for anything else."""
    if not path.is_file():
        raise RooflensError(f"file not found: {path}")
    try:
        text = path.read_text()
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RooflensError(f"cannot parse {path}: {first}") from None
    if not isinstance(data, dict):
        raise RooflensError(f"{path} must hold a mapping of fields, got {type(data).__name__}")
    return data


def gpu_from_dict(data: dict[str, Any], origin: str) -> GPUSpec:
    try:
        return GPUSpec.model_validate(data)
    except ValidationError as exc:
        raise RooflensError(validation_message(exc, f"GPU spec {origin}")) from None


@cache
def _gpu_presets() -> dict[str, GPUSpec]:
    specs = {}
    for path in sorted(GPU_DIR.glob("*.yaml")):
        spec = gpu_from_dict(read_data_file(path), path.name)
        specs[spec.id] = spec
    return specs


def gpu_ids() -> list[str]:
    return list(_gpu_presets())


def get_gpu(name: str) -> GPUSpec:
    """A preset id (`h100-sxm`) or a path to a user's JSON/YAML spec file."""
    presets = _gpu_presets()
    if name in presets:
        return presets[name]
    if name.endswith((".json", ".yaml", ".yml")) or "/" in name:
        return gpu_from_dict(read_data_file(Path(name)), name)
    raise unknown_name_error("gpu", name, list(presets))


@cache
def links() -> dict[str, LinkSpec]:
    data = read_data_file(LINK_FILE)
    return {key: LinkSpec.model_validate(value) for key, value in data.items()}


def default_system(gpu: GPUSpec, gpus_per_node: int = 8) -> SystemSpec:
    """The usual box for this GPU: NVLink (or PCIe) inside a node, InfiniBand NDR between nodes.

    The intra-node link takes the GPU's own per-direction NVLink bandwidth when it has one
    (latency from the links table), else its PCIe bandwidth.
    """
    table = links()
    if gpu.nvlink_bytes_per_s > 0:
        base = table["nvlink"]
        intra = base.model_copy(update={"bytes_per_s": gpu.nvlink_bytes_per_s})
    else:
        base = table["pcie"]
        intra = base.model_copy(update={"bytes_per_s": gpu.pcie_bytes_per_s})
    return SystemSpec(
        id=f"{gpu.id}-x{gpus_per_node}",
        gpu=gpu,
        gpus_per_node=gpus_per_node,
        intra_node=intra,
        inter_node=table["infiniband-ndr"],
    )
