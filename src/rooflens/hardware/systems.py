"""Named multi-GPU systems (DGX/HGX boxes, PCIe servers) and user system files.

A system is GPUs in nodes: `gpus_per_node` GPUs joined by an intra-node link, nodes joined by an
inter-node link. `get_system` resolves, in order: a system preset id (`dgx-h100`, one YAML file in
`presets/systems/`), a GPU preset id (`h100-sxm` -> `default_system`, eight GPUs over the GPU's own
NVLink or PCIe), or a path to a user JSON/YAML file holding either a system or a bare GPU spec.

Link convention (the same for every link in `presets/links.yaml` and every GPU preset):
`bytes_per_s` is what ONE GPU sends in ONE direction, summed over all its links of that kind.
Vendors quote the bidirectional sum ("NVLink 900 GB/s" is 450 GB/s each way) or bits per second
for NICs ("400 Gb/s" is 50 GB/s); a ring collective moves data one way per link at a time, so
the one-way figure is the one a cost formula needs. The inter-node figure is per GPU too, which
assumes one NIC per GPU as in the DGX/HGX reference designs.

System file format (presets and user files alike)::

    id: dgx-h100                 # optional in user files (defaults to the file name)
    name: NVIDIA DGX H100
    gpu: h100-sxm                # GPU preset id, path to a GPU spec file, or an inline GPU spec
    gpus_per_node: 8
    intra_node: nvlink4          # key of presets/links.yaml, or an inline link mapping
    inter_node: infiniband-ndr   # same; omit (or null) for a single node
    source: "where the topology comes from"
"""

from __future__ import annotations

import difflib
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rooflens.hardware.errors import (
    RooflensError,
    unknown_name_error,
    validated,
    validation_message,
)
from rooflens.hardware.presets import (
    PRESET_DIR,
    get_gpu,
    gpu_from_dict,
    gpu_ids,
    links,
    read_data_file,
)
from rooflens.hardware.spec import GPUSpec, LinkSpec, SystemSpec

SYSTEM_DIR = PRESET_DIR / "systems"
_DATA_SUFFIXES = (".json", ".yaml", ".yml")
LINK_HELP = "hardware/presets/links.yaml"


class SystemFile(BaseModel):
    """The on-disk form of a system: GPU and links by reference, resolved by `build_system`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str | None = Field(default=None, description="system id; defaults to the file name")
    name: str = Field(default="", description="human-readable name, e.g. 'NVIDIA DGX H100'")
    gpu: str | dict[str, Any] = Field(description="GPU preset id, GPU spec path, or inline spec")
    gpus_per_node: int = Field(gt=0)
    intra_node: str | LinkSpec = Field(description="links.yaml key or inline link")
    inter_node: str | LinkSpec | None = Field(default=None, description="None: a single node")
    source: str = Field(default="", description="where the topology comes from")


def _looks_like_path(name: str) -> bool:
    return name.endswith(_DATA_SUFFIXES) or "/" in name


def _resolve_link(ref: str | LinkSpec, origin: str) -> LinkSpec:
    if isinstance(ref, LinkSpec):
        return ref
    table = links()
    if ref in table:
        return table[ref]
    close = difflib.get_close_matches(ref, list(table), n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(sorted(table))}"
    raise RooflensError(f"unknown link '{ref}' in {origin}: {hint} (links live in {LINK_HELP})")


def _resolve_gpu(ref: str | dict[str, Any], origin: str, base_dir: Path) -> GPUSpec:
    if isinstance(ref, dict):
        return gpu_from_dict(ref, f"{origin} (inline gpu)")
    if _looks_like_path(ref) and not Path(ref).is_absolute():
        ref = str(base_dir / ref)  # a GPU file named in a system file is relative to that file
    return get_gpu(ref)


def build_system(data: dict[str, Any], origin: str, base_dir: Path = Path(".")) -> SystemSpec:
    """Validate a system mapping and resolve its GPU and link references into a SystemSpec."""
    spec = validated(SystemFile, data, f"system spec {origin}")
    gpu = _resolve_gpu(spec.gpu, origin, base_dir)
    inter = None if spec.inter_node is None else _resolve_link(spec.inter_node, origin)
    try:
        return SystemSpec(
            id=spec.id or Path(origin).stem,
            gpu=gpu,
            gpus_per_node=spec.gpus_per_node,
            intra_node=_resolve_link(spec.intra_node, origin),
            inter_node=inter,
        )
    except ValidationError as exc:
        raise RooflensError(validation_message(exc, f"system spec {origin}")) from None


def load_system_file(path: Path) -> SystemSpec:
    """A user file: a system (it has a `gpu` key) or a bare GPU spec (-> its default system)."""
    data = read_data_file(path)
    if "gpu" in data:
        return build_system(data, str(path), base_dir=path.parent)
    return default_system(gpu_from_dict(data, str(path)))


@cache
def _system_presets() -> dict[str, SystemSpec]:
    systems = {}
    for path in sorted(SYSTEM_DIR.glob("*.yaml")):
        data = read_data_file(path)
        if not data.get("source"):
            raise RooflensError(f"system preset {path.name} needs a `source` for its topology")
        system = build_system(data, path.name, base_dir=path.parent)
        systems[system.id] = system
    return systems


def system_ids() -> list[str]:
    return list(_system_presets())


def get_system(name: str) -> SystemSpec:
    """A system preset id, a GPU preset id (its default 8-GPU system), or a JSON/YAML file."""
    presets = _system_presets()
    if name in presets:
        return presets[name]
    if name in gpu_ids():
        return default_system(get_gpu(name))
    if _looks_like_path(name):
        return load_system_file(Path(name))
    raise unknown_name_error("system", name, list(presets) + gpu_ids())


def _home_system(gpu: GPUSpec, link: LinkSpec) -> SystemSpec | None:
    """The system preset of `gpu` whose intra-node link has `link`'s numbers, if any."""
    for system_id in system_ids():
        system = get_system(system_id)
        named = system.intra_node
        same = (named.bytes_per_s, named.latency_s) == (link.bytes_per_s, link.latency_s)
        if system.gpu.id == gpu.id and same:
            return system
    return None


def default_system(gpu: GPUSpec, gpus_per_node: int | None = None) -> SystemSpec:
    """The usual box for this GPU: NVLink (or PCIe) inside a node, InfiniBand NDR between nodes.

    The intra-node link takes the GPU's own per-direction NVLink bandwidth when it has one
    (latency from the links table), else its PCIe bandwidth. Where a system preset for this GPU
    names the same link (same bandwidth and latency), the link is that preset's, so it is
    labelled as the preset says (MI300X: Infinity Fabric, not "nvlink"; issue 26 §4), and so is
    the node size unless one is given: a GPU sold only in a rack-scale NVLink domain (GB200 in
    GB200 NVL72) keeps its 72-GPU domain, every other GPU gets eight per node.
    """
    table = links()
    if gpu.nvlink_bytes_per_s > 0:
        base = table["nvlink"]
        intra = base.model_copy(update={"bytes_per_s": gpu.nvlink_bytes_per_s})
    else:
        base = table["pcie"]
        intra = base.model_copy(update={"bytes_per_s": gpu.pcie_bytes_per_s})
    home = _home_system(gpu, intra)
    if home is not None:
        intra = home.intra_node
    if gpus_per_node is None:
        gpus_per_node = home.gpus_per_node if home is not None else 8
    return SystemSpec(
        id=f"{gpu.id}-x{gpus_per_node}",
        gpu=gpu,
        gpus_per_node=gpus_per_node,
        intra_node=intra,
        inter_node=table["infiniband-ndr"],
    )
