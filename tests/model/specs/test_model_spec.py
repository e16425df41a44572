"""The pydantic specs hold their bounds on every route in: construction,
`model_copy(update=...)`, files; floats are finite, a bool is not a number, ids are not empty."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import get_gpu
from rooflens.model.predict.api import make_scenario, run
from rooflens.model.specs.presets import get_model


def test_model_copy_validates_what_it_builds() -> None:
    sc = make_scenario("llama-2-7b", "h100-sxm", batch=4)
    with pytest.raises(RooflensError, match="field batch: Input should be greater than 0"):
        sc.workload.model_copy(update={"batch": -5})
    moe = get_model("mixtral-8x7b")
    with pytest.raises(RooflensError, match="n_experts > 0"):
        moe.model_copy(update={"n_experts": 0})
    # a valid copy still works, and gives what a fresh scenario gives
    eight = sc.model_copy(update={"workload": sc.workload.model_copy(update={"batch": 8})})
    direct = make_scenario("llama-2-7b", "h100-sxm", batch=8)
    assert run(eight).tpot_s == run(direct).tpot_s


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_gpu_peaks_and_sizes_are_finite(value: float) -> None:
    gpu = get_gpu("h100-sxm")
    with pytest.raises(RooflensError, match="finite"):
        gpu.model_copy(update={"peak_flops_per_s": {**gpu.peak_flops_per_s, "bf16": value}})
    with pytest.raises(RooflensError, match="finite"):
        gpu.model_copy(update={"hbm_bytes_per_s": value})
    with pytest.raises(RooflensError, match="finite"):
        make_scenario("llama-2-7b", "h100-sxm").model_copy(update={"overhead_bytes": value})


def test_a_bool_is_not_a_count() -> None:
    spec = get_model("llama-2-7b")
    with pytest.raises(ValidationError, match="not true/false"):
        spec.model_validate({**spec.model_dump(), "n_layers": True})
    with pytest.raises(RooflensError, match="not true/false"):
        make_scenario("llama-2-7b", "h100-sxm").workload.model_copy(update={"batch": True})


def test_empty_ids_and_unknown_activations_are_refused() -> None:
    gpu = get_gpu("h100-sxm")
    with pytest.raises(ValidationError, match="at least 1 character"):
        gpu.model_validate({**gpu.model_dump(), "id": ""})
    spec = get_model("llama-2-7b")
    with pytest.raises(ValidationError, match="silu"):
        spec.model_validate({**spec.model_dump(), "activation": "banana"})
