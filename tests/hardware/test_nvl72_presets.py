"""GB200 NVL72 and GB300 NVL72: the per-GPU presets are NVIDIA's rack totals / 72 (each within the
rounding of the rack figure as printed), and the systems are one 72-GPU NVLink domain."""

from __future__ import annotations

import pytest

from rooflens.hardware.presets import get_gpu, links
from rooflens.hardware.systems import get_system

T, P = 1e12, 1e15
# Rack totals as NVIDIA's product pages print them (https://www.nvidia.com/en-us/data-center/
# gb200-nvl72/ and .../gb300-nvl72/), with the half-unit of their last printed digit. Tensor
# figures are sparse unless "dense" is named; dense is half of sparse on both pages, except
# GB300's FP4 which prints both (1,440 | 1,080 PFLOPS).
RACK = {
    "gb200": {
        "memory_bytes": (13.4 * T, 0.05 * T),  # "Up to 13.4 TB HBM3E"
        "hbm_bytes_per_s": (576 * T, 0.5 * T),  # "576 TB/s"
        "fp4_dense": (720 * P, 0.5 * P),  # NVFP4 "1,440 | 720 PFLOPS"
        "fp8_sparse": (720 * P, 0.5 * P),
        "int8_sparse": (720 * P, 0.5 * P),
        "bf16_sparse": (360 * P, 0.5 * P),
        "tf32_sparse": (180 * P, 0.5 * P),
        "fp32": (5760 * T, 0.5 * T),  # "5,760 TFLOPS"
    },
    "gb300": {
        "memory_bytes": (20 * T, 1 * T),  # "20 TB": 72 x 288 GB = 20.7 TB, printed to the TB
        "hbm_bytes_per_s": (576 * T, 0.5 * T),
        "fp4_dense": (1080 * P, 0.5 * P),  # FP4 "1,440 | 1,080 PFLOPS"
        "fp8_sparse": (720 * P, 0.5 * P),
        "bf16_sparse": (360 * P, 0.5 * P),
        "tf32_sparse": (180 * P, 0.5 * P),
        "fp32": (6 * P, 0.5 * P),  # "6 PFLOPS"
    },
}
NVLINK_RACK_BYTES_PER_S = (130 * T, 0.5 * T)  # "NVLink Bandwidth 130 TB/s", bidirectional


def per_gpu_rack_value(gpu_id: str, key: str) -> float:
    """The preset's per-GPU figure scaled to the rack, in the rack figure's terms."""
    gpu = get_gpu(gpu_id)
    if key in ("memory_bytes", "hbm_bytes_per_s"):
        return 72 * getattr(gpu, key)
    dtype, _, kind = key.partition("_")
    dense = gpu.peak_flops_per_s[dtype]  # type: ignore[index]
    return 72 * dense * (gpu.sparsity_2_4_multiplier if kind == "sparse" else 1.0)


@pytest.mark.parametrize(("gpu_id", "key"), [(g, k) for g, rack in RACK.items() for k in rack])
def test_per_gpu_figures_are_the_rack_totals_over_72(gpu_id: str, key: str) -> None:
    total, half_digit = RACK[gpu_id][key]
    assert per_gpu_rack_value(gpu_id, key) == pytest.approx(total, abs=half_digit)


@pytest.mark.parametrize("gpu_id", ["gb200", "gb300"])
def test_nvlink_is_the_rack_fabric_per_gpu_one_way(gpu_id: str) -> None:
    gpu = get_gpu(gpu_id)
    total, half_digit = NVLINK_RACK_BYTES_PER_S
    assert 72 * 2 * gpu.nvlink_bytes_per_s == pytest.approx(total, abs=half_digit)
    assert gpu.nvlink_bytes_per_s == links()["nvlink5"].bytes_per_s  # 1.8 TB/s bidirectional
    assert "/ 72" in gpu.sources["peak_flops_per_s"]  # the derivation is stated


def test_blackwell_ultra_raises_fp4_and_memory_only() -> None:
    gb200, gb300 = get_gpu("gb200"), get_gpu("gb300")
    assert gb300.peak("fp4") == pytest.approx(1.5 * gb200.peak("fp4"))  # 15 vs 10 PFLOPS dense
    assert gb300.peak("bf16") == gb200.peak("bf16") and gb300.peak("fp8") == gb200.peak("fp8")
    assert gb300.memory_bytes == pytest.approx(288e9, rel=1e-5)
    assert "int8" not in gb300.peak_flops_per_s  # INT8 tensor math cut on Blackwell Ultra
    # The GB200's Blackwell runs at 1,200 W, above the HGX B200's 1,000 W, and faster.
    assert get_gpu("b200").peak("bf16") < gb200.peak("bf16")


@pytest.mark.parametrize(("system_id", "gpu_id"), [("gb200-nvl72", "gb200"),
                                                   ("gb300-nvl72", "gb300")])  # fmt: skip
def test_seventy_two_gpus_in_one_nvlink_domain(system_id: str, gpu_id: str) -> None:
    system = get_system(system_id)
    assert system.gpu.id == gpu_id and system.gpus_per_node == 72
    assert system.link_for(8) == system.link_for(16) == system.link_for(72) == links()["nvlink5"]
    assert system.inter_node is not None and system.link_for(73) == system.inter_node
    # The GPU id alone is the same rack: TP 16 on `--gpu gb200` stays on NVLink too.
    alone = get_system(gpu_id)
    assert alone.gpus_per_node == 72 and alone.link_for(16) == links()["nvlink5"]
    # ... while an 8-GPU box of the same link (DGX B200) leaves the node at 9 GPUs.
    assert get_system("dgx-b200").link_for(16).name.startswith("infiniband")
