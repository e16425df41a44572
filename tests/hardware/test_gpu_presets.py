"""GPU presets and the link table: every file loads, cites its numbers, and is physically sane."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import GPU_DIR, get_gpu, gpu_ids, links, read_data_file
from rooflens.hardware.spec import COMPUTE_DTYPES, GPUSpec, LinkSpec

REQUIRED = [
    "a100-sxm-40gb",
    "a100-sxm-80gb",
    "a100-pcie-80gb",
    "a40",
    "a10g",
    "l4",
    "l40s",
    "h100-sxm",
    "h100-pcie",
    "h200",
    "b200",
    "rtx-4090",
    "v100-sxm-32gb",
    "mi300x",
]
GB = 1e9
ALL = [get_gpu(gpu_id) for gpu_id in gpu_ids()]


def ids(gpus: list[GPUSpec]) -> list[str]:
    return [g.id for g in gpus]


def test_required_presets_exist() -> None:
    assert set(REQUIRED) <= set(gpu_ids())


def test_every_preset_file_loads_and_is_named_by_its_id() -> None:
    files = sorted(GPU_DIR.glob("*.yaml"))
    assert len(files) == len(gpu_ids())
    for path in files:
        assert read_data_file(path)["id"] == path.stem
        assert get_gpu(path.stem).id == path.stem


@pytest.mark.parametrize("gpu", ALL, ids=ids(ALL))
def test_sources_say_dense_and_name_the_memory_unit(gpu: GPUSpec) -> None:
    # The numbers are dense peaks and driver-visible capacities; each source must say which.
    assert "dense" in gpu.sources["peak_flops_per_s"].lower()
    assert any(unit in gpu.sources["memory_bytes"] for unit in ("MiB", "bytes"))
    assert "sm_count" in gpu.sources and "smem_per_sm_bytes" in gpu.sources


@pytest.mark.parametrize("gpu", ALL, ids=ids(ALL))
def test_physical_sanity(gpu: GPUSpec) -> None:
    peaks = gpu.peak_flops_per_s
    assert set(peaks) <= set(COMPUTE_DTYPES)
    assert 16 * GB <= gpu.memory_bytes <= 300 * GB
    assert gpu.memory_bytes % 2**20 == 0, "capacities are whole MiB as the driver reports them"
    assert 0.2e12 <= gpu.hbm_bytes_per_s <= 10e12
    assert gpu.peak("bf16") >= gpu.peak("fp32")
    assert gpu.peak("tf32") >= gpu.peak("fp32")
    if "fp8" in peaks:
        assert peaks["fp8"] >= gpu.peak("bf16")
    if "int4" in peaks:
        assert peaks["int4"] >= peaks["int8"]
    if "int8" in peaks:
        assert peaks["int8"] >= gpu.peak("fp16")
    # Link bandwidths are one-way per GPU: far below device memory bandwidth.
    assert gpu.nvlink_bytes_per_s < gpu.hbm_bytes_per_s
    assert gpu.pcie_bytes_per_s <= gpu.hbm_bytes_per_s
    assert gpu.l2_bytes < 1e9 and 32 * 1024 <= gpu.smem_per_sm_bytes <= 256 * 1024


def test_tensor_core_generations() -> None:
    assert "fp8" not in get_gpu("a100-sxm-80gb").peak_flops_per_s  # Ampere: no FP8
    assert set(get_gpu("v100-sxm-32gb").peak_flops_per_s) == {"fp32", "fp16"}
    assert get_gpu("v100-sxm-32gb").sparsity_2_4_multiplier == 1.0
    for hopper_or_later in ("h100-sxm", "h200", "b200"):
        peaks = get_gpu(hopper_or_later).peak_flops_per_s
        assert "fp8" in peaks and "int4" not in peaks
    for ada in ("l40s", "rtx-4090"):
        assert {"fp8", "int4"} <= set(get_gpu(ada).peak_flops_per_s)


def test_generational_ordering() -> None:
    a100, h100, h200, b200 = (get_gpu(g) for g in ("a100-sxm-80gb", "h100-sxm", "h200", "b200"))
    assert a100.hbm_bytes_per_s < h100.hbm_bytes_per_s < h200.hbm_bytes_per_s < b200.hbm_bytes_per_s
    assert a100.peak("bf16") < h100.peak("bf16") == h200.peak("bf16") < b200.peak("bf16")
    assert h100.memory_bytes < h200.memory_bytes < b200.memory_bytes
    assert get_gpu("a100-sxm-40gb").peak_flops_per_s == a100.peak_flops_per_s


def test_geforce_peaks_are_fp32_accumulate() -> None:
    # Ada whitepaper, RTX 4090: FP16 tensor 165.2 TFLOPS dense, FP32 accumulate (330.3 with FP16).
    assert get_gpu("rtx-4090").peak("fp16") == pytest.approx(165.2e12)
    assert get_gpu("rtx-3090").peak("fp16") == pytest.approx(71e12)


def test_bridge_only_parts_have_no_fabric() -> None:
    for bridged in ("a40", "a100-pcie-80gb", "h100-pcie", "h100-nvl", "rtx-3090"):
        assert get_gpu(bridged).nvlink_bytes_per_s == 0
    assert get_gpu("mi300x").nvlink_bytes_per_s == pytest.approx(448e9)


def test_link_table_is_one_way_and_consistent() -> None:
    for key, link in links().items():
        assert link.name == key
        assert 10e9 <= link.bytes_per_s <= 1e12, key
        assert 0 < link.latency_s < 1e-4 and link.source
    table = links()
    assert get_gpu("h100-sxm").nvlink_bytes_per_s == table["nvlink4"].bytes_per_s
    assert get_gpu("b200").nvlink_bytes_per_s == table["nvlink5"].bytes_per_s


# NCCL src/graph/tuning.cc hwLat, ring LL (µs per hop): the hardware floor `ideal` charges.
NCCL_HW_LATENCY_S = {"nvlink": 0.6e-6, "infinity": 0.6e-6, "pcie": 1.0e-6}


def test_every_link_has_a_hop_floor_below_its_nccl_step() -> None:
    for key, link in links().items():
        family = next((f for f in NCCL_HW_LATENCY_S if key.startswith(f)), "network")
        assert link.hop_latency_s == NCCL_HW_LATENCY_S.get(family, 2.7e-6), key
        assert link.floor_latency_s < link.latency_s and "hop floor" in link.source, key


def test_a_hop_floor_above_the_step_latency_is_refused() -> None:
    step = {"name": "x", "bytes_per_s": 1e11, "latency_s": 1e-6, "source": "test"}
    assert LinkSpec.model_validate(step).floor_latency_s == 1e-6  # none given: the step latency
    with pytest.raises(ValueError, match="hop_latency_s"):
        LinkSpec.model_validate(step | {"hop_latency_s": 2e-6})


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_user_spec_from_json_and_yaml(tmp_path: Path) -> None:
    data = get_gpu("l4").model_dump() | {"id": "my-l4", "hbm_bytes_per_s": 350e9}
    from_json = get_gpu(write(tmp_path / "mine.json", json.dumps(data)))
    from_yaml = get_gpu(write(tmp_path / "mine.yaml", yaml.safe_dump(data)))
    assert from_json == from_yaml
    assert from_json.id == "my-l4" and from_json.hbm_bytes_per_s == 350e9


def test_unknown_preset_suggests_close_matches() -> None:
    with pytest.raises(RooflensError, match="did you mean h100-sxm"):
        get_gpu("h100-sxn")


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("bad.yaml", "id: [unclosed\n  peak: {", "cannot parse"),
        ("bad.json", '{"id": "x",', "cannot parse"),
        ("list.yaml", "- a\n- b\n", "must hold a mapping"),
        ("partial.yaml", "id: half\nname: Half a GPU\n", "invalid GPU spec"),
    ],
)
def test_malformed_file_gives_one_line_error(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    with pytest.raises(RooflensError) as info:
        get_gpu(write(tmp_path / name, text))
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_missing_file_gives_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(RooflensError, match="file not found"):
        get_gpu(str(tmp_path / "nope.yaml"))


# Resident threads per SM by chip (CUDA C++ Programming Guide, "Technical Specifications per
# Compute Capability"): the data-centre dies (GV100 7.0, GA100 8.0, GH100 9.0, GB100 10.0) hold
# 64 warps, the graphics dies (GA10x 8.6, AD10x 8.9) 48. Two parts of one generation differ.
GRAPHICS_DIES = {"a10", "a10g", "a40", "rtx-3090", "l4", "l40s", "rtx-4090", "rtx-pro-6000"}


@pytest.mark.parametrize("gpu", ALL, ids=ids(ALL))
def test_resident_threads_per_sm_follow_the_die(gpu: GPUSpec) -> None:
    if gpu.vendor != "nvidia":
        assert gpu.max_threads_per_sm is None  # unknown: the eager thread roof is off
        return
    assert gpu.max_threads_per_sm == (1536 if gpu.id in GRAPHICS_DIES else 2048)
    assert "Compute Capability" in gpu.sources["max_threads_per_sm"]


def test_resident_threads_need_a_source() -> None:
    data = read_data_file(GPU_DIR / "a40.yaml")
    data["sources"].pop("max_threads_per_sm")
    with pytest.raises(ValueError, match="max_threads_per_sm"):
        GPUSpec.model_validate(data)
