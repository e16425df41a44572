"""A dtype the GPU has no tensor-core rate for is priced on the unit kernels fall back to, and
the prediction says so (GPUSpec.peak's fallbacks: fp8 -> fp16 on Ampere, bf16 -> fp16 on Volta)."""

from __future__ import annotations

from rooflens.hardware.presets import get_gpu
from rooflens.model.predict.api import make_scenario, run


def test_fp8_on_a100_is_noted_and_priced_at_the_fp16_peak() -> None:
    pred = run(make_scenario("llama-3-8b", "a100-sxm-80gb", weight_dtype="fp8", act_dtype="fp8",
                             profile="ideal"))  # fmt: skip
    assert any("no fp8" in note and "312 TFLOP/s" in note for note in pred.notes)
    a100 = get_gpu("a100-sxm-80gb")
    gemm = next(p for p in pred.prefill.priced if p.op.name == "mlp.up_gate")
    assert gemm.op.compute_dtype == "fp8"
    assert float(gemm.compute_s) == float(gemm.op.flops) / a100.peak_flops_per_s["fp16"]


def test_no_note_where_the_unit_exists() -> None:
    pred = run(make_scenario("llama-3-8b", "h100-sxm", weight_dtype="fp8", act_dtype="fp8"))
    assert not [note for note in pred.notes if "tensor-core rate" in note]
