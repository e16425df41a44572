"""Collective communication (model/comm.py): closed forms, and the check against real A100
measurements (aiconfigurator NCCL 2.27.3 nccl-tests table; Vidur torch.distributed all-reduce)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hardware.presets import default_system, get_gpu, links
from hardware.profiles import IDEAL, get_profile
from model.comm import (
    IDEAL_PROTOCOLS,
    Protocol,
    all_gather_s,
    all_reduce_s,
    all_to_all_s,
    load_comm_calibration,
    protocols_for,
    send_recv_s,
)
from validate import comm_fit

A100 = get_gpu("a100-sxm-80gb")
DGX = default_system(A100, 8).model_copy(update={"inter_node": links()["infiniband-hdr"]})
NV, IB = DGX.intra_node, DGX.inter_node
assert IB is not None
ONE = (Protocol(1.0, 0.0, 1.0),)  # one latency per step, full bandwidth: the textbook ring


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_ring_all_reduce_closed_form(n: int) -> None:
    # Patarasuk & Yuan 2009: 2(n−1)/n · S / β + 2(n−1) · α.
    S = 12_345_678.0
    expected = 0.0 if n == 1 else 2 * (n - 1) / n * S / NV.bytes_per_s + 2 * (n - 1) * NV.latency_s
    assert all_reduce_s(S, n, DGX, ONE) == pytest.approx(expected)


def test_all_gather_is_half_an_all_reduce_in_bytes_and_steps() -> None:
    S = np.array([1e3, 1e6, 1e9])
    assert np.allclose(2 * all_gather_s(S, 8, DGX, ONE), all_reduce_s(S, 8, DGX, ONE))


def test_collectives_broadcast_over_payload_grids() -> None:
    S = np.geomspace(1e3, 1e9, 7)[:, None] * np.ones(3)[None, :]
    for f in (all_reduce_s, all_gather_s, all_to_all_s):
        out = f(S, 4, DGX)
        assert out.shape == S.shape
        assert np.all(np.diff(out[:, 0]) > 0)  # more bytes, more time
    assert send_recv_s(S, DGX).shape == S.shape


def test_multi_node_ring_uses_one_nic_per_gpu() -> None:
    # 2 nodes of 8: 8 rings side by side, each through its own 25 GB/s NIC -> 200 GB/s busbw,
    # capped by NVLink; every step waits on the inter-node latency.
    S, n = 1e9, 16
    expected = 2 * (n - 1) / n * S / min(NV.bytes_per_s, 8 * IB.bytes_per_s)
    expected += 2 * (n - 1) * IB.latency_s
    assert all_reduce_s(S, n, DGX, ONE) == pytest.approx(expected)
    # One GPU per node: the single NIC is the ring.
    one_per_node = all_reduce_s(S, 2, DGX, ONE, per_node=1)
    assert one_per_node == pytest.approx(S / IB.bytes_per_s + 2 * IB.latency_s)


def test_hierarchical_all_to_all_needs_fewer_hops() -> None:
    # DeepSpeed-MoE §5.3: (G_node − 1) + (G/G_node − 1) hops instead of G − 1.
    per_hop = (Protocol(1.0, 0.0, 1.0),)
    tiny, n = 1.0, 64  # 8 nodes of 8; a tiny message is all latency
    flat = all_to_all_s(tiny, n, DGX, per_hop)
    hier = all_to_all_s(tiny, n, DGX, per_hop, hierarchical=True)
    assert flat == pytest.approx((n - 1) * IB.latency_s, rel=1e-3)
    assert hier == pytest.approx(7 * NV.latency_s + 7 * IB.latency_s, rel=1e-3)
    # Large messages: both move (m−1)/m · S through the NIC; hierarchical adds an NVLink pass.
    big = 1e9
    flat_big = all_to_all_s(big, n, DGX, per_hop)
    hier_big = all_to_all_s(big, n, DGX, per_hop, hierarchical=True)
    assert flat_big == pytest.approx(63 * IB.latency_s + 56 / 64 * big / IB.bytes_per_s)
    assert hier_big > flat_big


def test_ideal_profile_is_the_lower_bound_link_model() -> None:
    assert protocols_for(IDEAL) == IDEAL_PROTOCOLS
    calibrated = protocols_for(get_profile("calibrated", A100))
    S = np.geomspace(256, 1e9, 40)
    for n in (2, 4, 8, 16):
        assert np.all(all_reduce_s(S, n, DGX) <= all_reduce_s(S, n, DGX, calibrated))


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
