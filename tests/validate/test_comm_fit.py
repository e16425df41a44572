"""The communication model against real A100 measurements (aiconfigurator NCCL 2.27.3
nccl-tests table; Vidur torch.distributed all-reduce), and the fit that produced
hardware/calibration/comm-a100.yaml (validate/comm_fit.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rooflens.hardware.presets import get_gpu, links
from rooflens.hardware.systems import default_system
from rooflens.model.pricing.comm import load_comm_calibration
from rooflens.validate import comm_fit

A100 = get_gpu("a100-sxm-80gb")
DGX = default_system(A100, 8).model_copy(update={"inter_node": links()["infiniband-hdr"]})
NV = DGX.intra_node


# ------------------------------------------------------------------ measured A100 collectives
@pytest.fixture(scope="module")
def nccl(measured_dir: Path) -> pd.DataFrame:
    return comm_fit.load_nccl(measured_dir)


@pytest.fixture(scope="module")
def vidur(measured_dir: Path) -> pd.DataFrame:
    return comm_fit.load_vidur_all_reduce(measured_dir)


def test_nccl_table_units(nccl: pd.DataFrame) -> None:
    # message_size is in elements: 2^28 half elements (537 MB) all-reduced on 8 A100s in
    # 4.226 ms is a bus bandwidth of 2·7/8·537e6/4.226e-3 = 222 GB/s, under NVLink3's 300 GB/s.
    row = nccl[(nccl.collective == "all_reduce") & (nccl.n_gpus == 8)].nlargest(1, "bytes")
    bus = 2 * 7 / 8 * row["bytes"].iloc[0] / row["measured_s"].iloc[0]
    assert 150e9 < bus < NV.bytes_per_s


def test_all_reduce_error_against_a100_nccl(nccl: pd.DataFrame) -> None:
    rows = nccl[nccl.collective == "all_reduce"].reset_index(drop=True)
    errors = comm_fit.error_table(rows, load_comm_calibration())
    table = comm_fit.summary(errors, ["n_gpus", "size"])
    print("\nall-reduce on A100 (NCCL 2.27.3), median |error| by GPU count and message size:")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    ideal = errors["ideal_err"].abs().median()
    calibrated = errors["calibrated_err"].abs().median()
    below = (errors["ideal_s"] <= errors["measured_s"]).mean()
    print(
        f"overall: ideal {ideal:.3f}, calibrated {calibrated:.3f}; ideal under-predicts {below:.1%}"
    )
    assert below == 1.0  # the ideal link model is a lower bound on every measured row
    assert calibrated < 0.10 < ideal
    for n, group in errors.groupby("n_gpus"):
        assert group["calibrated_err"].abs().median() < 0.15, n


def test_fitted_protocols_carry_over_to_other_nccl_collectives(nccl: pd.DataFrame) -> None:
    # Fitted on all-reduce only; all-gather, reduce-scatter and all-to-all are held out.
    others = nccl[nccl.collective != "all_reduce"].reset_index(drop=True)
    errors = comm_fit.error_table(others, load_comm_calibration())
    table = comm_fit.summary(errors, ["collective"])
    print("\nheld-out NCCL collectives:\n" + table.to_string(index=False))
    assert (errors["ideal_s"] <= errors["measured_s"]).all()
    assert (table["calibrated_median_abs_err"] < 0.15).all()


def test_vidur_all_reduce(vidur: pd.DataFrame) -> None:
    errors = comm_fit.error_table(vidur, load_comm_calibration())
    table = comm_fit.summary(errors, ["source", "n_gpus", "per_node"])
    print("\nVidur all-reduce (torch.distributed, median of repeats):")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    below = (errors["ideal_s"] <= errors["measured_s"]).mean()
    print(f"ideal under-predicts {below:.1%} of {len(errors)} rows")
    assert below > 0.999
    # Inside one NVSwitch node the NCCL-fitted model carries over within 30 %.
    one_node = errors[(errors.source == "vidur-a100_dgx") & (errors.per_node == errors.n_gpus)]
    assert one_node["calibrated_err"].abs().median() < 0.30


def test_calibration_file_is_the_fit_of_the_data(nccl: pd.DataFrame) -> None:
    rows = nccl[nccl.collective == "all_reduce"].reset_index(drop=True)
    refit = comm_fit.fit_protocols(rows)
    stored = load_comm_calibration()
    assert len(refit) == len(stored) == 2
    for a, b in zip(refit, stored, strict=True):
        assert a.bandwidth_fraction == pytest.approx(b.bandwidth_fraction, abs=1e-4)
        assert a.latency_base_scale == pytest.approx(b.latency_base_scale, abs=1e-4)
        assert a.latency_step_scale == pytest.approx(b.latency_step_scale, abs=1e-4)
    # The bandwidth protocol reaches a physical share of NVLink; the fast one pays less latency.
    low, bw = sorted(stored, key=lambda p: p.bandwidth_fraction)
    assert 0.5 < bw.bandwidth_fraction < 1.0
    assert low.latency_base_scale < bw.latency_base_scale
