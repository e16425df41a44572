"""A dtype the GPU has no tensor-core rate for is priced on the unit kernels fall back to, and
the prediction says so (GPUSpec.peak's fallbacks: bf16 -> fp16 on Volta). fp8 activations on a
GPU without fp8 units are refused instead: no engine runs W8A8-FP8 there (FP8 checkpoints run
weight-only, vLLM's FP8 Marlin)."""

from __future__ import annotations

import pytest

from rooflens.hardware.errors import FieldError, RooflensError
from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import DEFAULT_ENGINE, get_profile
from rooflens.model.predict.api import make_scenario, run
from rooflens.model.pricing.kinds import kind_terms


def test_bf16_on_volta_is_noted_and_priced_at_the_fp16_peak() -> None:
    pred = run(make_scenario("llama-3-8b", "v100-sxm-32gb", profile="ideal"))
    assert any("no bf16" in note and "125 TFLOP/s" in note for note in pred.notes)
    v100 = get_gpu("v100-sxm-32gb")
    gemm = next(p for p in pred.prefill.priced if p.op.name == "mlp.up_gate")
    assert gemm.op.compute_dtype == "bf16"
    assert float(gemm.compute_s) == float(gemm.op.flops) / v100.peak_flops_per_s["fp16"]


@pytest.mark.parametrize("gpu", ["a100-sxm-80gb", "a10", "rtx-3090"])
@pytest.mark.parametrize(
    "precision", [{"quant": "w8a8-fp8"}, {"quant": "fp8-block"}, {"act_dtype": "fp8"}]
)
def test_fp8_activations_without_fp8_units_are_refused_with_what_engines_run(gpu, precision):
    with pytest.raises(FieldError, match="needs FP8 tensor cores") as caught:
        make_scenario("llama-3-8b", gpu, **precision)
    # the widget or flag that asked for it: the scheme's, else the activations'
    assert caught.value.field == ("quant" if "quant" in precision else "act_dtype")
    assert "FP8 Marlin" in str(caught.value)
    assert "--weight-dtype fp8" in str(caught.value)
    # what the message says to run instead is accepted: fp8 weights, bf16 activations
    sc = make_scenario("llama-3-8b", gpu, weight_dtype="fp8")
    assert (sc.precision.weight_dtype, sc.precision.act_dtype) == ("fp8", "bf16")


def test_no_note_where_the_unit_exists() -> None:
    pred = run(make_scenario("llama-3-8b", "h100-sxm", weight_dtype="fp8", act_dtype="fp8"))
    assert not [note for note in pred.notes if "tensor-core rate" in note]


def test_blackwell_ultra_fp4_is_priced_at_its_kernels_rate_under_calibrated_only() -> None:
    """The B300's engines run SM100-family FP4 kernels at 2x FP8 (9 PFLOP/s), not the datasheet's
    13.5: `calibrated` prices NVFP4 GEMMs on that rate and says so, `ideal` keeps the datasheet,
    and a B200 (whose datasheet FP4 is already 2x FP8) is priced and noted as before."""
    b300 = get_gpu("b300")
    for profile, peak in (("ideal", 13.5e15), ("calibrated", 9.0e15)):
        pred = run(make_scenario("llama-3-8b", "b300", quant="nvfp4", profile=profile))
        gemm = next(p for p in pred.prefill.priced if p.op.name == "mlp.up_gate")
        assert gemm.op.compute_dtype == "fp4"
        terms = kind_terms(get_profile(profile, b300, DEFAULT_ENGINE), gemm.op)
        fraction = terms.compute_fraction
        assert float(gemm.compute_s) == pytest.approx(float(gemm.op.flops) / (peak * fraction))
        assert 0.3 < fraction <= 1.0  # a fitted share of 9 PFLOP/s
        noted = [n for n in pred.notes if "fp4 math on b300" in n]
        if profile == "ideal":
            assert not noted
        else:
            assert len(noted) == 1 and "9,000 TFLOP/s" in noted[0] and "13,500" in noted[0]
    assert b300.kernel_peak("fp4") == 9.0e15
    for gpu, quant in (("b200", "nvfp4"), ("b300", "bf16")):
        pred = run(make_scenario("llama-3-8b", gpu, quant=quant))
        assert not [n for n in pred.notes if "kernels issue" in n], (gpu, quant)


def test_volta_is_told_no_engine_runs_fp8_weights_there() -> None:
    # vLLM's weight-only FP8 Marlin needs compute capability 7.5; the V100 is 7.0
    with pytest.raises(FieldError, match="needs FP8 tensor cores") as caught:
        make_scenario("llama-3-8b", "v100-sxm-32gb", quant="w8a8-fp8")
    assert "no engine runs FP8 weights there" in str(caught.value)
    assert "--weight-dtype fp8" not in str(caught.value)


def test_the_fp8_quant_optimization_is_refused_there_too() -> None:
    sc = make_scenario("llama-3-8b", "a100-sxm-80gb", opts=["quant:scheme=fp8"])
    with pytest.raises(RooflensError, match="scheme=fp8 needs FP8 tensor cores") as caught:
        run(sc)
    assert caught.value.field == "opts" and "--weight-dtype fp8" in str(caught.value)
    # on a GPU with FP8 units the optimization prices its matmuls on the fp8 unit
    pred = run(make_scenario("llama-3-8b", "h100-sxm", opts=["quant:scheme=fp8"]))
    gemm = next(p for p in pred.prefill.priced if p.op.name == "mlp.up_gate")
    assert gemm.op.compute_dtype == "fp8"
