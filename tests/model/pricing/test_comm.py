"""Collective communication (model/pricing/comm.py): closed forms and the profiles' protocols. The
check
against real A100 measurements is in tests/validate/test_comm_fit.py."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.hardware.presets import get_gpu, links
from rooflens.hardware.profiles import IDEAL, get_profile
from rooflens.hardware.systems import default_system
from rooflens.model.pricing.comm import (
    IDEAL_PROTOCOLS,
    Protocol,
    all_gather_s,
    all_reduce_s,
    all_to_all_s,
    protocols_for,
    send_recv_s,
)

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
