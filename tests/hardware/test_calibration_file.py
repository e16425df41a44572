"""Which fitted terms a GPU's `calibrated` profile takes (hardware/profiles.py calibration_file):
its own fit, else a measured GPU's of the same SM design (compute capability; NVIDIA's
family-specific targets group 10.0 with 10.3), else the fit pooled over the measured GPUs."""

from __future__ import annotations

import pytest

from rooflens.hardware.presets import get_gpu, gpu_ids
from rooflens.hardware.profiles import (
    CALIBRATION_DIR,
    calibration_file,
    get_profile,
    sm_design,
)
from rooflens.model.predict.scenario import priced_by

MEASURED = sorted(
    p.stem for p in CALIBRATION_DIR.glob("*.yaml") if p.stem in gpu_ids()
)  # the GPUs `rooflens calibrate fit` wrote a file for


def test_every_nvidia_preset_states_its_compute_capability() -> None:
    for gpu_id in gpu_ids():
        gpu = get_gpu(gpu_id)
        if gpu.vendor == "nvidia":
            assert gpu.compute_capability is not None, gpu_id
            assert "compute_capability" in gpu.sources, gpu_id
        else:
            assert gpu.compute_capability is None, gpu_id


def test_sm_design_groups_a_family_from_blackwell_on_only() -> None:
    cc = {g: get_gpu(g) for g in ("b200", "b300", "rtx-pro-6000", "a100-sxm-80gb", "a40", "l40s")}
    assert sm_design(cc["b200"]) == sm_design(cc["b300"]) == "10.x"  # sm_100f: 10.0 and 10.3
    assert sm_design(cc["rtx-pro-6000"]) == "12.x"  # another family
    assert sm_design(cc["a100-sxm-80gb"]) == "8.0" != sm_design(cc["a40"])  # GA100 vs GA102
    assert sm_design(cc["l40s"]) == "8.9"  # Ada: no measured GPU has its SM
    assert sm_design(get_gpu("mi300x")) is None


@pytest.mark.parametrize(
    ("gpu_id", "expected"),
    [
        ("h200", "h100-sxm"),
        ("gh200", "h100-sxm"),
        ("h100-pcie", "h100-sxm"),
        ("a100-sxm-40gb", "a100-sxm-80gb"),
        ("a10", "a40"),
        ("b200", "b300"),
        ("gb200", "b300"),
        ("l40s", "generic"),
        ("mi300x", "generic"),
        ("v100-sxm-32gb", "generic"),
    ],
)
def test_an_unmeasured_gpu_takes_the_terms_of_its_sm_design(gpu_id: str, expected: str) -> None:
    path, why = calibration_file(get_gpu(gpu_id))
    assert path.stem == expected
    assert (expected in why) if expected != "generic" else ("pooled" in why)


def test_a_measured_gpu_keeps_its_own_fit() -> None:
    assert set(MEASURED) >= {"a100-sxm-80gb", "h100-sxm", "b300", "rtx-pro-6000"}
    for gpu_id in MEASURED:
        assert calibration_file(get_gpu(gpu_id)) == (CALIBRATION_DIR / f"{gpu_id}.yaml",
                                                     "its own fit")  # fmt: skip


def test_a_users_spec_without_a_compute_capability_takes_the_pooled_fit() -> None:
    own = get_gpu("h200").model_copy(update={"id": "my-h200", "compute_capability": None})
    assert calibration_file(own)[0].name == "generic.yaml"


def test_the_sibling_prices_with_the_same_terms_and_its_own_datasheet() -> None:
    h100, h200 = get_gpu("h100-sxm"), get_gpu("h200")
    for engine in ("vllm", "sglang", "trtllm", None):
        assert (
            get_profile("calibrated", h200, engine).kinds
            == get_profile("calibrated", h100, engine).kinds
        )
    # every face names where the terms come from
    assert "terms of h100-sxm" in priced_by("calibrated", "vllm", h200)
    assert "pooled" in priced_by("calibrated", "vllm", get_gpu("l40s"))
    assert priced_by("calibrated", "vllm", h100) == priced_by("calibrated", "vllm")
    assert priced_by("ideal", "vllm", h200) == priced_by("ideal")
