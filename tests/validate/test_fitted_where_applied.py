"""Calibration is fitted through the path it is applied through (issue 11 §1): the committed
A100 profile, applied by kernels predict (model/pricing/kernel_table.py, the path the operator
table's
rows re-price through, tests/model/pricing/test_reprice.py), reproduces the error its fit
recorded in the file's provenance. This is why the calibrated golden numbers moved when the
two pricing paths became one: the attention terms were refitted on the operator table's grid."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import get_profile
from rooflens.model.pricing.kernel_table import predict_frame
from rooflens.validate.calibrate import faster_than_peak
from rooflens.validate.datasets import load_kernels
from rooflens.validate.fit_terms import kind_rows, sample_rows
from rooflens.validate.frontier import best_of_impls

A100 = get_gpu("a100-sxm-80gb")


@pytest.fixture(scope="module")
def a100(measured_dir):
    table = load_kernels(measured_dir)
    return table[table["gpu"] == A100.id]


@pytest.mark.parametrize("kind", ["attention", "attention_decode", "gemm"])
def test_applied_profile_reproduces_its_recorded_fit_error(a100, kind):
    profile = get_profile("calibrated", A100, engine=None)  # the kinds pooled over engines
    rows = a100[kind_rows(a100, kind)].reset_index(drop=True)
    if kind.startswith("attention"):
        rows, _ = best_of_impls(rows)  # attention is fitted on the per-shape frontier
    rows = sample_rows(rows).reset_index(drop=True)  # the rows the fit priced
    rows = rows[~faster_than_peak(rows)].reset_index(drop=True)
    predicted = predict_frame(rows, A100, profile)["predicted_s"].to_numpy()
    error = np.abs(predicted / rows["measured_s"].to_numpy() - 1.0)
    recorded = profile.provenance["fit"][kind]
    assert len(rows) == recorded["rows"]
    assert np.median(error) == pytest.approx(recorded["median_abs_error"], abs=6e-5)
    assert np.quantile(error, 0.9) == pytest.approx(recorded["p90_abs_error"], abs=6e-5)
