"""GPUSpec / LinkSpec / SystemSpec: the validators name the field in one line; peaks fall back."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import get_gpu, gpu_from_dict, links
from rooflens.hardware.spec import GPUSpec, LinkSpec, SystemSpec


def a100_dict() -> dict[str, Any]:
    return get_gpu("a100-sxm-80gb").model_dump()


def rejection(data: dict[str, Any]) -> str:
    with pytest.raises(RooflensError) as info:
        gpu_from_dict(data, "test.yaml")
    message = str(info.value)
    assert "\n" not in message, "errors are one line"
    return message


def test_missing_source_is_rejected_naming_the_field() -> None:
    data = a100_dict()
    del data["sources"]["hbm_bytes_per_s"]
    message = rejection(data)
    assert "hbm_bytes_per_s" in message and "source" in message


def test_empty_source_string_counts_as_missing() -> None:
    data = a100_dict()
    data["sources"]["l2_bytes"] = ""
    assert "l2_bytes" in rejection(data)


def test_tdp_needs_a_source_only_when_given() -> None:
    data = a100_dict()
    del data["sources"]["tdp_watts"]
    assert "tdp_watts" in rejection(data)
    data["tdp_watts"] = None
    assert gpu_from_dict(data, "test.yaml").tdp_watts is None


def test_negative_bandwidth_is_rejected_naming_the_field() -> None:
    data = a100_dict()
    data["hbm_bytes_per_s"] = -2.0e12
    message = rejection(data)
    assert message.startswith("invalid GPU spec test.yaml")
    assert "hbm_bytes_per_s" in message


def test_negative_link_bandwidth_is_rejected() -> None:
    data = a100_dict()
    data["nvlink_bytes_per_s"] = -1.0
    assert "nvlink_bytes_per_s" in rejection(data)


def test_empty_peak_dict_is_rejected_naming_the_field() -> None:
    data = a100_dict()
    data["peak_flops_per_s"] = {}
    assert "peak_flops_per_s" in rejection(data)


def test_non_positive_peak_is_rejected_naming_the_dtype() -> None:
    data = a100_dict()
    data["peak_flops_per_s"]["bf16"] = 0.0
    assert "peak_flops_per_s[bf16]" in rejection(data)


def test_unknown_dtype_and_misspelt_field_are_rejected() -> None:
    data = a100_dict()
    data["peak_flops_per_s"]["fp2"] = 1.0e15  # fp4 is a unit since Blackwell; fp2 is not
    assert "fp2" in rejection(data)
    data = a100_dict()
    del data["hbm_bytes_per_s"]
    data["hbm_bandwidth"] = 2.0e12
    message = rejection(data)
    # the missing field is named; the unknown key is counted, not quoted (it could be anything)
    assert "hbm_bytes_per_s" in message and "1 field it does not know" in message
    assert "hbm_bandwidth" not in message and "2e+12" not in message


def test_specs_are_frozen() -> None:
    gpu = get_gpu("h100-sxm")
    with pytest.raises(ValidationError):
        gpu.hbm_bytes_per_s = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("gpu_id", "dtype", "runs_as"),
    [
        ("a100-sxm-80gb", "fp8", "fp16"),  # Ampere has no FP8 tensor cores: upcast to fp16
        ("v100-sxm-32gb", "bf16", "fp16"),  # Volta has no bf16
        ("v100-sxm-32gb", "int8", "fp16"),
        ("v100-sxm-32gb", "tf32", "fp32"),
        ("h100-sxm", "int4", "int8"),  # Hopper dropped int4
        ("l4", "int4", "int8"),  # no published int4 figure
        ("h100-sxm", "fp8", "fp8"),
    ],
)
def test_peak_falls_back_to_the_unit_that_runs_the_dtype(
    gpu_id: str, dtype: str, runs_as: str
) -> None:
    gpu = get_gpu(gpu_id)
    assert gpu.peak(dtype) == gpu.peak_flops_per_s[runs_as]  # type: ignore[index]


def test_a100_ridge_point_matches_published_anchor() -> None:
    # anchors.md E8 ("Towards 100x speedup" §1.1): 312 TFLOP/s bf16 dense / 2.039 TB/s ≈ 153
    gpu = get_gpu("a100-sxm-80gb")
    assert gpu.ridge_point("bf16") == pytest.approx(312e12 / 2.039e12)
    assert gpu.ridge_point("bf16") == pytest.approx(153, abs=0.5)


@given(
    peak=st.floats(min_value=1e9, max_value=1e17),
    bandwidth=st.floats(min_value=1e9, max_value=1e14),
)
def test_ridge_point_is_peak_over_bandwidth_for_any_valid_spec(
    peak: float, bandwidth: float
) -> None:
    data = a100_dict()
    data["peak_flops_per_s"] = {"bf16": peak}
    data["hbm_bytes_per_s"] = bandwidth
    gpu = GPUSpec.model_validate(data)
    assert gpu.ridge_point("bf16") == pytest.approx(peak / bandwidth)
    assert gpu.peak("fp16") == peak  # fp16 runs on the bf16 unit when it is the only one


def test_link_spec_rejects_zero_bandwidth() -> None:
    with pytest.raises(ValidationError, match="bytes_per_s"):
        LinkSpec(name="x", bytes_per_s=0.0, latency_s=0.0, source="test")


@given(gpus_per_node=st.integers(1, 16), n_gpus=st.integers(1, 256))
def test_link_for_switches_to_inter_node_exactly_past_one_node(
    gpus_per_node: int, n_gpus: int
) -> None:
    table = links()
    system = SystemSpec(
        id="test",
        gpu=get_gpu("h100-sxm"),
        gpus_per_node=gpus_per_node,
        intra_node=table["nvlink4"],
        inter_node=table["infiniband-ndr"],
    )
    expected = "nvlink4" if n_gpus <= gpus_per_node else "infiniband-ndr"
    assert system.link_for(n_gpus).name == expected


def test_link_for_without_inter_node_stays_inside() -> None:
    system = SystemSpec(
        id="single", gpu=get_gpu("l4"), gpus_per_node=4, intra_node=links()["pcie4"]
    )
    assert system.link_for(64).name == "pcie4"


def test_idle_power_needs_a_source_and_must_sit_below_tdp() -> None:
    data = a100_dict()
    data["idle_watts"] = 50.0
    assert "idle_watts" in rejection(data)
    data["sources"]["idle_watts"] = "a measurement"
    assert gpu_from_dict(data, "test.yaml").idle_watts == 50.0
    data["idle_watts"] = data["tdp_watts"]
    assert "below tdp_watts" in rejection(data)


def test_a_kernel_peak_above_the_datasheet_is_rejected() -> None:
    data = get_gpu("b300").model_dump()
    data["kernel_peak_flops_per_s"]["fp4"] = 14.0e15  # above the datasheet's 13.5 PFLOP/s
    assert "kernel_peak_flops_per_s[fp4]" in rejection(data)
    data["kernel_peak_flops_per_s"] = {"int8": 1e15}  # a unit the part does not list
    assert "kernel_peak_flops_per_s[int8]" in rejection(data)


def test_a_kernel_peak_needs_a_source() -> None:
    data = get_gpu("b300").model_dump()
    del data["sources"]["kernel_peak_flops_per_s"]
    assert "kernel_peak_flops_per_s" in rejection(data)


def test_an_exponential_rate_needs_a_source_and_a_positive_value() -> None:
    data = get_gpu("b300").model_dump()
    del data["sources"]["exp_per_sm_cycle"]
    assert "exp_per_sm_cycle" in rejection(data)
    data = get_gpu("b300").model_dump()
    data["exp_per_sm_cycle"] = 0
    assert "exp_per_sm_cycle" in rejection(data)


def test_only_blackwell_ultra_states_its_own_exponential_rate() -> None:
    """Blackwell Ultra doubles standard Blackwell's MUFU.EX2 throughput (its presets cite
    NVIDIA's blog); every other preset takes the 16 a clock of compute capability 7.0-12.0."""
    from rooflens.hardware.presets import gpu_ids
    from rooflens.hardware.spec import EXP_PER_SM_CYCLE

    rates = {g: get_gpu(g).exp_rate() for g in gpu_ids()}
    assert {g for g, r in rates.items() if r != EXP_PER_SM_CYCLE} == {"b300", "gb300"}
    assert rates["b300"] == rates["gb300"] == 2 * rates["b200"] == 32.0


def test_kernel_peak_caps_only_the_unit_it_names() -> None:
    """Blackwell Ultra's FP4 runs at 2x FP8 in the engines' SM100-family kernels (the datasheet's
    3x needs SM103-only MMA); its other units, and every part without a cap, keep the datasheet."""
    b300, gb300 = get_gpu("b300"), get_gpu("gb300")
    assert b300.kernel_peak("fp4") == pytest.approx(2 * b300.peak("fp8"))
    assert gb300.kernel_peak("fp4") == pytest.approx(2 * gb300.peak("fp8"))
    assert b300.peak("fp4") == pytest.approx(3 * b300.peak("fp8"))  # the datasheet is kept
    for dtype in ("bf16", "fp8", "int8", "fp32"):
        assert b300.kernel_peak(dtype) == b300.peak(dtype)
    for gpu in ("b200", "gb200", "rtx-pro-6000", "h100-sxm", "a100-sxm-80gb"):
        spec = get_gpu(gpu)
        assert all(spec.kernel_peak(d) == spec.peak(d) for d in ("fp4", "fp8", "bf16", "int4"))
