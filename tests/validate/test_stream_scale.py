"""Each GPU's stream efficiency and the bandwidth scale a pooled fit prices its rows with
(validate/stream_scale.py), on tables made from known terms: the efficiency read back is the
memory fraction that made the rows, and a pooled fit with the scales explains two memory
systems with one fraction that the fit without them cannot."""

from __future__ import annotations

import itertools
import math

import pandas as pd
import pytest

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import KindEfficiency, Profile
from rooflens.model.pricing.kernel_table import predict_frame
from rooflens.validate.calibrate import fit_kind
from rooflens.validate.stream_scale import scaled_gpu, stream_efficiency, stream_scales


def _rows(gpu_id: str, memory_fraction: float) -> pd.DataFrame:
    eff = KindEfficiency(compute_fraction=0.7, memory_fraction=memory_fraction,
                         overhead_cycles=2000.0, overlap_power=2.0)  # fmt: skip
    sizes, widths = (1, 4, 16, 256, 4096), (2048, 8192, 28672)
    table = pd.DataFrame([{"op": "gemm", "m": m, "n": n, "k": k, "dtype": "bf16"}
                          for m, n, k in itertools.product(sizes, widths, widths)])  # fmt: skip
    truth = Profile(name="truth", kinds={"gemm": eff}, source="test")
    table["measured_s"] = predict_frame(table, get_gpu(gpu_id), truth)["predicted_s"]
    return table.assign(gpu=gpu_id, impl="synthetic", source="test")


def test_a_gpus_stream_efficiency_is_the_fraction_its_weight_streams_reach():
    table = pd.concat([_rows("a100-sxm-80gb", 0.6), _rows("h100-sxm", 0.9)], ignore_index=True)
    efficiency = stream_efficiency(table)
    # memory-bound rows of >= 10 us: the launch floor (1-1.4 us here) is a few % of them
    assert efficiency["a100-sxm-80gb"] == pytest.approx(0.6, rel=0.05)
    assert efficiency["h100-sxm"] == pytest.approx(0.9, rel=0.05)
    scales = stream_scales(table)
    assert math.prod(scales.values()) == pytest.approx(1.0, abs=2e-3)  # over the pool's mean
    ratio = efficiency["h100-sxm"] / efficiency["a100-sxm-80gb"]
    assert scales["h100-sxm"] / scales["a100-sxm-80gb"] == pytest.approx(ratio, rel=1e-3)
    assert stream_scales(_rows("h100-sxm", 0.9)) == {}  # one GPU: its own fit, no scale
    h100 = get_gpu("h100-sxm")
    assert scaled_gpu(h100, scales).hbm_bytes_per_s == pytest.approx(
        h100.hbm_bytes_per_s * scales["h100-sxm"]
    )
    assert scaled_gpu(h100, None) is h100


def test_a_pooled_fit_explains_two_memory_systems_with_the_scales_and_not_without():
    table = pd.concat([_rows("a100-sxm-80gb", 0.6), _rows("h100-sxm", 0.9)], ignore_index=True)
    scales = stream_scales(table)
    _, plain_stats = fit_kind(table, "gemm", max_evals=1500)
    scaled, scaled_stats = fit_kind(table, "gemm", max_evals=1500, scales=scales)
    assert scaled_stats["median_abs_error"] < 0.03 < plain_stats["median_abs_error"]
    # the pool's fraction is the geometric mean of the two memory systems
    assert scaled.memory_fraction == pytest.approx(math.sqrt(0.6 * 0.9), rel=0.05)
    # a family measured on the H100 alone, fitted with the pool's scales, carries the pool's
    # efficiency to a GPU nobody measured, not the H100's
    family, _ = fit_kind(_rows("h100-sxm", 0.9), "gemm", max_evals=1500, scales=scales)
    assert family.memory_fraction == pytest.approx(math.sqrt(0.6 * 0.9), rel=0.05)
