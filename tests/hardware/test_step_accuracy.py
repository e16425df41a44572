"""A prediction's accuracy note (hardware/step_accuracy.py, model/predict/predictor.py): the
figures are the engine-steps benchmark's own, a measured GPU's in sample and any other GPU's
held out, and the summary the benchmark writes is the median, p90 and worst |step − 1|."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from rooflens.hardware.step_accuracy import STEP_ACCURACY_FILE, step_accuracy
from rooflens.model.predict.api import make_scenario, run

REPO = Path(__file__).resolve().parents[2]


def _file(tmp_path: Path) -> Path:
    stats = {"median": 0.05, "p90": 0.1, "worst": 0.2, "steps": 12}
    held = {"median": 0.15, "p90": 0.3, "worst": 0.6, "steps": 40}
    data = {"in_sample": {"h100-sxm": {"vllm": {"bf16": {"decode": stats}}}},
            "held_out": {"vllm": {"bf16": {"decode": held}}}}  # fmt: skip
    path = tmp_path / "acc.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_measured_gpu_reads_its_own_figures_and_any_other_the_held_out_ones(tmp_path):
    path = _file(tmp_path)
    own = step_accuracy("h100-sxm", "vllm", "bf16", "decode", path)
    assert own is not None and not own.held_out and (own.median, own.steps) == (0.05, 12)
    other = step_accuracy("l40s", "vllm", "bf16", "decode", path)
    assert other is not None and other.held_out and (other.p90, other.worst) == (0.3, 0.6)
    # nothing measured: no figure, never another engine's, scheme's or phase's
    assert step_accuracy("h100-sxm", "vllm", "bf16", "prefill", path) is None
    assert step_accuracy("l40s", "sglang", "bf16", "decode", path) is None
    assert step_accuracy("l40s", "vllm", "w4a16", "decode", path) is None


def test_the_benchmark_summary_is_the_median_p90_and_worst_of_each_group():
    sys.path.insert(0, str(REPO))
    from benchmarks.engine_steps import accuracy

    rng = np.random.default_rng(3)
    step = 1.0 + rng.normal(0, 0.1, 30)
    frame = pd.DataFrame({"engine": "vllm", "scheme": "w8a8-fp8",
                          "phase": ["decode"] * 20 + ["prefill"] * 10, "step": step})  # fmt: skip
    frame.loc[3, "step"] = np.nan  # a step no table prices all of is left out
    out = accuracy(frame)["vllm"]["w8a8-fp8"]
    error = np.abs(np.delete(step[:20], 3) - 1.0)
    assert out["decode"]["steps"] == 19
    assert out["decode"]["median"] == pytest.approx(np.median(error), abs=1e-4)
    assert out["decode"]["p90"] == pytest.approx(np.quantile(error, 0.9), abs=1e-4)
    assert out["decode"]["worst"] == pytest.approx(error.max(), abs=1e-4)
    assert out["prefill"]["steps"] == 10


def _note(pred) -> list[str]:
    return [n for n in pred.notes if n.startswith("accuracy:")]


def test_a_dense_calibrated_prediction_states_the_committed_figures():
    kw = {"batch": 8, "prompt_len": 2048, "output_len": 16, "engine": "vllm"}
    h100 = _note(run(make_scenario("llama-3-8b", "h100-sxm", **kw)))
    assert len(h100) == 1 and "in sample on h100-sxm" in h100[0]
    for phase in ("prefill", "decode"):
        stats = step_accuracy("h100-sxm", "vllm", "bf16", phase, STEP_ACCURACY_FILE)
        assert stats is not None
        assert f"{phase} median {100 * stats.median:.1f} %, p90 {100 * stats.p90:.1f} %" in h100[0]
    l40s = _note(run(make_scenario("llama-3-8b", "l40s", quant="w8a8-fp8", **kw)))
    assert len(l40s) == 1 and "held out" in l40s[0] and "W8A8-FP8" in l40s[0]
    # no claim where none was measured: the ideal bound, a MoE model, an unmeasured scheme
    assert not _note(run(make_scenario("llama-3-8b", "h100-sxm", profile="ideal", **kw)))
    assert not _note(run(make_scenario("mixtral-8x7b", "h100-sxm", tp=2, **kw)))
    assert not _note(run(make_scenario("llama-3-8b", "h100-sxm", quant="w4a16", **kw)))


def test_the_committed_figures_are_the_benchmarks_at_the_committed_terms(measured_dir):
    # a refit that moves the H100's TensorRT-LLM steps must rewrite the file
    # (python -m benchmarks.engine_steps --write-accuracy)
    sys.path.insert(0, str(REPO))
    from benchmarks.engine_steps import accuracy, scenarios

    committed = yaml.safe_load(STEP_ACCURACY_FILE.read_text())["in_sample"]["h100-sxm"]["trtllm"]
    assert accuracy(scenarios(["h100-sxm"], ["trtllm"]))["trtllm"] == committed
