"""Systems: presets, GPU ids and user files resolve to SystemSpecs with the right links."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import get_gpu, links, read_data_file
from rooflens.hardware.systems import SYSTEM_DIR, get_system, system_ids

REQUIRED = ["dgx-a100", "dgx-h100", "hgx-h200", "8x-l40s-pcie", "mi300x-oam-8"]


def test_required_system_presets_load_with_sources() -> None:
    assert set(REQUIRED) <= set(system_ids())
    for path in SYSTEM_DIR.glob("*.yaml"):
        data = read_data_file(path)
        assert data["id"] == path.stem and data["source"]
        assert get_system(path.stem).id == path.stem


@pytest.mark.parametrize("system_id", sorted(system_ids()))
def test_intra_node_link_agrees_with_the_gpu_preset(system_id: str) -> None:
    system = get_system(system_id)
    gpu, intra = system.gpu, system.intra_node
    if gpu.nvlink_bytes_per_s > 0:  # a switched fabric: the GPU's own per-direction figure
        assert intra.bytes_per_s == gpu.nvlink_bytes_per_s
    elif intra.name.startswith("pcie"):
        assert intra.bytes_per_s == gpu.pcie_bytes_per_s
    else:  # a bridge joins pairs only
        assert intra.name.startswith("nvlink-bridge") and system.gpus_per_node == 2
    if system.inter_node is not None:
        assert system.inter_node.bytes_per_s <= intra.bytes_per_s


def test_link_for_picks_inter_node_when_the_group_outgrows_a_node() -> None:
    dgx = get_system("dgx-h100")
    assert dgx.gpu.id == "h100-sxm" and dgx.gpus_per_node == 8
    assert dgx.link_for(1).name == dgx.link_for(8).name == "nvlink4"
    assert dgx.link_for(9).name == dgx.link_for(64).name == "infiniband-ndr"
    assert get_system("dgx-a100").link_for(16).bytes_per_s == 25e9  # HDR 200 Gb/s
    assert get_system("2x-h100-nvl").link_for(4).name == "pcie5"


def test_gpu_id_gives_its_default_system() -> None:
    system = get_system("h100-sxm")
    assert system.id == "h100-sxm-x8" and system.gpu == get_gpu("h100-sxm")
    assert system.intra_node.bytes_per_s == 450e9
    assert get_system("l40s").intra_node.bytes_per_s == 32e9  # no NVLink: PCIe


def test_system_file_yaml_with_references(tmp_path: Path) -> None:
    path = tmp_path / "lab.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "Our 4x L4 box",
                "gpu": "l4",
                "gpus_per_node": 4,
                "intra_node": "pcie4",
                "inter_node": "roce-200g",
                "source": "our rack",
            }
        )
    )
    system = get_system(str(path))
    assert system.id == "lab" and system.gpu.id == "l4" and system.gpus_per_node == 4
    assert system.link_for(4).name == "pcie4" and system.link_for(5).name == "roce-200g"


def test_system_file_json_with_inline_gpu_and_link(tmp_path: Path) -> None:
    gpu = get_gpu("a10").model_dump() | {"id": "my-a10"}
    link = {"name": "bridge", "bytes_per_s": 50e9, "latency_s": 3e-6, "source": "measured"}
    path = tmp_path / "pair.json"
    path.write_text(json.dumps({"id": "pair", "gpu": gpu, "gpus_per_node": 2, "intra_node": link}))
    system = get_system(str(path))
    assert system.gpu.id == "my-a10" and system.intra_node.bytes_per_s == 50e9
    assert system.inter_node is None and system.link_for(16).name == "bridge"


def test_system_file_naming_a_gpu_file_beside_it(tmp_path: Path) -> None:
    (tmp_path / "gpu.yaml").write_text(yaml.safe_dump(get_gpu("l40s").model_dump()))
    path = tmp_path / "box.yaml"
    path.write_text(yaml.safe_dump({"gpu": "gpu.yaml", "gpus_per_node": 8, "intra_node": "pcie4"}))
    assert get_system(str(path)).gpu == get_gpu("l40s")


def test_bare_gpu_file_gives_its_default_system(tmp_path: Path) -> None:
    path = tmp_path / "card.json"
    path.write_text(json.dumps(get_gpu("h200").model_dump() | {"id": "my-h200"}))
    system = get_system(str(path))
    assert system.id == "my-h200-x8" and system.intra_node.bytes_per_s == 450e9


def test_unknown_system_suggests_close_matches() -> None:
    with pytest.raises(RooflensError, match="did you mean dgx-h100"):
        get_system("dgx-h10")


def test_unknown_link_in_a_file_suggests_close_matches(tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump({"gpu": "h100-sxm", "gpus_per_node": 8, "intra_node": "nvlnk4"}))
    with pytest.raises(RooflensError, match=r"unknown link 'nvlnk4'.*did you mean nvlink4"):
        get_system(str(path))


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ({"gpu": "h100-sxm", "gpus_per_node": 0, "intra_node": "nvlink4"}, "gpus_per_node"),
        ({"gpu": "h100-sxm", "gpus_per_node": 8}, "intra_node"),
        (
            {"gpu": "h100-sxm", "gpus_per_node": 8, "intra_node": "pcie4", "nodes": 2},
            "1 field it does not know",
        ),
    ],
)
def test_invalid_system_file_names_the_field_in_one_line(
    tmp_path: Path, content: dict[str, object], field: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(content))
    with pytest.raises(RooflensError) as info:
        get_system(str(path))
    assert field in str(info.value) and "\n" not in str(info.value)


def test_unknown_gpu_in_a_system_file(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump({"gpu": "h100-sxn", "gpus_per_node": 8, "intra_node": "pcie5"}))
    with pytest.raises(RooflensError, match="did you mean h100-sxm"):
        get_system(str(path))


def test_links_referenced_by_presets_exist() -> None:
    table = links()
    for path in SYSTEM_DIR.glob("*.yaml"):
        data = read_data_file(path)
        for key in ("intra_node", "inter_node"):
            assert data.get(key) is None or data[key] in table


def test_a_gpus_default_box_labels_its_link_as_its_system_preset_does() -> None:
    """Issue 26 §4: MI300X showed "nvlink" although its preset says Infinity Fabric. The default
    box takes the link of a system preset of the same GPU when the numbers are the same, so
    only the label (and its source) changes; a GPU without such a preset keeps the template."""
    from rooflens.hardware.presets import get_gpu, links
    from rooflens.hardware.systems import default_system, get_system

    mi300x = default_system(get_gpu("mi300x")).intra_node
    assert mi300x == get_system("mi300x-oam-8").intra_node
    assert "Infinity Fabric" in mi300x.source and "nvlink" not in mi300x.name
    assert mi300x.bytes_per_s == get_gpu("mi300x").nvlink_bytes_per_s  # the GPU's own figure
    assert mi300x.latency_s == links()["nvlink"].latency_s
    rtx = default_system(get_gpu("rtx-4090")).intra_node
    assert rtx.name == "pcie" and rtx.bytes_per_s == get_gpu("rtx-4090").pcie_bytes_per_s
