"""CI regression, blocking layer: the calibrated profiles' error on the committed measurement
sets may not exceed the budget in validate/accuracy_budget.yaml. Attention is measured against
what its calibrated terms describe: per shape, the fastest implementation (validate/frontier.py);
each engine's own bias is reported by `rooflens validate compare --by gpu,op,impl`. Every
calibrated row is priced as the engine that ran it. Fused MoE is budgeted over all rows and per
kernel-config subset (`moe/tuned`, `moe/untuned`), GEMM and MoE also per precision (`gemm/fp8`).
The H100 set is the engines' tables plus the validator's own runs (scored, not fitted)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rooflens.validate.compare import join, summarize
from rooflens.validate.datasets import load_kernels
from rooflens.validate.frontier import best_of_impls

BUDGET = yaml.safe_load(
    (
        Path(__file__).parents[2] / "src" / "rooflens" / "validate" / "accuracy_budget.yaml"
    ).read_text()
)


@pytest.fixture(scope="module")
def summary(measured_dir):
    frontier, _ = best_of_impls(load_kernels(measured_dir))
    table = summarize(join(frontier), ("gpu", "op"), subsets=True)
    print("\n" + table.round(4).to_string())
    return table.set_index(["gpu", "op"])


@pytest.mark.parametrize(("gpu", "op"), [(g, o) for g, ops in BUDGET.items() for o in ops])
def test_calibrated_error_within_budget(summary, gpu, op):
    row, budget = summary.loc[(gpu, op)], BUDGET[gpu][op]
    assert row["calibrated_median"] <= budget["median"], (gpu, op, row["calibrated_median"])
    assert row["calibrated_p90"] <= budget["p90"], (gpu, op, row["calibrated_p90"])


def test_every_measured_class_has_a_budget(summary):
    assert {f"{g}/{o}" for g, o in summary.index} == {f"{g}/{o}" for g in BUDGET for o in BUDGET[g]}


def test_calibration_beats_the_ideal_everywhere(summary):
    assert (summary["calibrated_median"] < summary["ideal_median"]).all()


@pytest.mark.parametrize("op", ["gemm", "attention_decode"])
def test_h100_profile_is_unbiased_on_the_h100_runs(summary, op):
    # Before the H100 had a fit of its own, it took generic.yaml (A100 and A40 only), whose
    # median bias on its rows was +7.0 % (GEMM) and +24 % (decode attention): decode steps
    # priced too slow (issue 11). Its own fit, now on the engines' H100 tables, must sit within
    # 5 % of the measurements.
    assert abs(summary.loc[("h100-sxm", op), "calibrated_bias"]) <= 0.05
