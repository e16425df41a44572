"""Collective communication times: all-reduce, all-gather, reduce-scatter, all-to-all (flat and
hierarchical) and point-to-point send/recv, for a group of GPUs in a `SystemSpec`.

Every collective is an α-β model (Hockney 1994): a fixed latency plus the bytes each GPU must push
through its link over that link's bandwidth. NCCL picks, per call, the cheapest of its protocols
(LL: low latency, low bandwidth; Simple: more latency, near-full bandwidth), and its own tuner
prices each as `baseLat + steps · hwLat + bytes / bw` (NCCL src/graph/tuning.cc), so the time
here is the minimum over a list of `Protocol` terms:

    t = min over protocols of [ s0 · λ + steps · s1 · λ + bytes_through_link / (f · β) ]

with λ the link's NCCL step latency (`LinkSpec.latency_s`) and β its per-GPU one-way bandwidth
(hardware/spec.py).

- `ideal` profile: one protocol (f = 1, s0 = 1, s1 = 0) on the link's hardware floor instead of
  λ: datasheet bandwidth and one hop at `LinkSpec.hop_latency_s` (NCCL's own per-hop hardware
  latency, 0.6 µs on NVLink, hardware/presets/links.yaml), with no protocol latency.
  Patarasuk & Yuan (2009) show the ring's 2(n−1)/n · S bytes per GPU are the least any
  all-reduce moves, and any collective crosses a link at least once, so this is a lower bound
  on NCCL and on the engines' one-shot kernels alike (tests/validate/test_comm_lower_bound.py
  checks it against every measured NCCL and custom all-reduce row).
- `calibrated` profile: the protocols fitted to real NCCL measurements (validate/comm_fit.py), read
  from `hardware/calibration/comm-a100.yaml`; without that file, the profile's own
  `comm_bandwidth_fraction` and `comm_latency_scale` (per step) are used.

Groups spanning nodes: with one NIC per GPU (the SystemSpec convention), a ring over m nodes of g
GPUs runs g rings side by side, each crossing nodes through its own NIC, so the ring bandwidth is
min(β_intra, g · β_inter) and every step waits on the inter-node latency (NCCL's multi-ring
design; Jeaugey, NCCL 2.0, GTC 2017). All-to-all flat costs n − 1 hops at inter-node latency;
hierarchical all-to-all (DeepSpeed-MoE, Rajbhandari et al. 2022 §5.3) does an intra-node
all-to-all then one among nodes: (g − 1) + (m − 1) hops, O(G_node + G/G_node) instead of O(G).
Payloads may be numpy arrays (grids price in one call); group sizes are plain ints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import read_data_file
from rooflens.hardware.profiles import CALIBRATION_DIR, Profile
from rooflens.hardware.spec import LinkSpec, SystemSpec

if TYPE_CHECKING:
    from rooflens.model.ops.op import Num

COMM_CALIBRATION_FILE = CALIBRATION_DIR / "comm-a100.yaml"
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")


@dataclass(frozen=True)
class Protocol:
    """One NCCL-style protocol: bandwidth share and latencies as multiples of the link latency."""

    bandwidth_fraction: float  # f: achieved share of the link's one-way bandwidth
    latency_base_scale: float  # s0: fixed cost per collective, in link latencies
    latency_step_scale: float  # s1: cost per ring step / all-to-all hop, in link latencies
    on_hop_floor: bool = False  # λ is the link's hardware hop floor, not its NCCL step latency

    def latency_unit_s(self, link: LinkSpec) -> float:
        return link.floor_latency_s if self.on_hop_floor else link.latency_s


IDEAL_PROTOCOLS: tuple[Protocol, ...] = (Protocol(1.0, 1.0, 0.0, on_hop_floor=True),)


@cache
def load_comm_calibration(path: Path = COMM_CALIBRATION_FILE) -> tuple[Protocol, ...]:
    """The fitted protocols of a comm calibration file (see hardware/calibration/comm-a100.yaml)."""
    data = read_data_file(path)
    try:
        return tuple(
            Protocol(
                float(p["bandwidth_fraction"]),
                float(p["latency_base_scale"]),
                float(p["latency_step_scale"]),
            )
            for p in data["protocols"].values()
        )
    except (KeyError, TypeError, AttributeError, ValueError):
        raise RooflensError(
            f"{path}: expected `protocols: {{name: {{bandwidth_fraction, latency_base_scale, "
            "latency_step_scale}}}}`; regenerate it with `python -m rooflens.validate.comm_fit`"
        ) from None


def protocols_for(profile: Profile) -> tuple[Protocol, ...]:
    """The link model a pricing profile implies (ideal bound, or fitted NCCL protocols)."""
    if profile.name == "ideal":
        return IDEAL_PROTOCOLS
    if COMM_CALIBRATION_FILE.is_file():
        return load_comm_calibration(COMM_CALIBRATION_FILE)
    return (Protocol(profile.comm_bandwidth_fraction, 0.0, profile.comm_latency_scale),)


def phase_s(
    steps: Num, link_bytes: Num, link: LinkSpec, protocols: tuple[Protocol, ...], bw: float
) -> Num:
    """min over protocols of s0·λ + steps·s1·λ + link_bytes / (f·bw); zero when nothing moves
    (a scalar `steps` ≤ 0; an array of steps, one per payload, is priced as given)."""
    if np.ndim(steps) == 0 and steps <= 0:
        return 0.0 * link_bytes
    best: Any = None
    for p in protocols:
        lam = p.latency_unit_s(link)
        t = (p.latency_base_scale + steps * p.latency_step_scale) * lam + link_bytes / (
            p.bandwidth_fraction * bw
        )
        best = t if best is None else np.minimum(best, t)
    return best


def _layout(n_gpus: int, system: SystemSpec, per_node: int | None) -> tuple[int, int]:
    """(GPUs per node in the group, nodes): packed onto as few nodes as possible by default."""
    g = min(n_gpus, per_node or system.gpus_per_node)
    return g, math.ceil(n_gpus / g)


def _ring_link(system: SystemSpec, g: int, nodes: int) -> tuple[LinkSpec, float]:
    """The link whose latency a ring step waits on, and the ring's bandwidth per GPU."""
    if nodes == 1 or system.inter_node is None:
        return system.intra_node, system.intra_node.bytes_per_s
    inter = system.inter_node
    return inter, min(system.intra_node.bytes_per_s, g * inter.bytes_per_s)


def all_reduce_s(
    payload_bytes: Num,
    n_gpus: int,
    system: SystemSpec,
    protocols: tuple[Protocol, ...] = IDEAL_PROTOCOLS,
    per_node: int | None = None,
) -> Num:
    """Ring all-reduce of a `payload_bytes` buffer: 2(n−1) steps, 2(n−1)/n · S bytes per GPU."""
    if n_gpus <= 1:
        return 0.0 * payload_bytes
    g, nodes = _layout(n_gpus, system, per_node)
    link, bw = _ring_link(system, g, nodes)
    steps = 2 * (n_gpus - 1)
    return phase_s(steps, steps / n_gpus * payload_bytes, link, protocols, bw)


def all_gather_s(
    total_bytes: Num,
    n_gpus: int,
    system: SystemSpec,
    protocols: tuple[Protocol, ...] = IDEAL_PROTOCOLS,
    per_node: int | None = None,
) -> Num:
    """Ring all-gather into a `total_bytes` output (nccl-tests size): n−1 steps, (n−1)/n · S.

    Reduce-scatter of a `total_bytes` input costs the same (the first half of a ring all-reduce).
    """
    if n_gpus <= 1:
        return 0.0 * total_bytes
    g, nodes = _layout(n_gpus, system, per_node)
    link, bw = _ring_link(system, g, nodes)
    steps = n_gpus - 1
    return phase_s(steps, steps / n_gpus * total_bytes, link, protocols, bw)


def all_to_all_s(
    buffer_bytes: Num,
    n_gpus: int,
    system: SystemSpec,
    protocols: tuple[Protocol, ...] = IDEAL_PROTOCOLS,
    hierarchical: bool = False,
    per_node: int | None = None,
) -> Num:
    """All-to-all of a `buffer_bytes` send buffer per GPU (S/n to each peer, nccl-tests size).

    One node: n−1 hops, (n−1)/n · S through each GPU's link. Across m nodes of g GPUs, flat:
    n−1 hops at inter-node latency, the (n−g)/n · S bound for other nodes through the NIC.
    Hierarchical: an intra-node all-to-all ((g−1) hops, (g−1)/g · S) then one among nodes
    ((m−1) hops, (m−1)/m · S through the NIC): fewer hops, one extra intra-node pass.
    """
    if n_gpus <= 1:
        return 0.0 * buffer_bytes
    g, nodes = _layout(n_gpus, system, per_node)
    intra, inter = system.intra_node, system.inter_node
    if nodes == 1 or inter is None:
        moved = (n_gpus - 1) / n_gpus * buffer_bytes
        return phase_s(n_gpus - 1, moved, intra, protocols, intra.bytes_per_s)
    if hierarchical:
        local = phase_s(g - 1, (g - 1) / g * buffer_bytes, intra, protocols, intra.bytes_per_s)
        remote = phase_s(
            nodes - 1, (nodes - 1) / nodes * buffer_bytes, inter, protocols, inter.bytes_per_s
        )
        return local + remote
    # Flat: the NIC carries the off-node share; the equivalent bandwidth of the busier path.
    off_node_s = (n_gpus - g) / n_gpus * buffer_bytes / inter.bytes_per_s
    on_node_s = (g - 1) / n_gpus * buffer_bytes / intra.bytes_per_s
    busiest_s = np.maximum(off_node_s, on_node_s)
    return phase_s(n_gpus - 1, busiest_s * inter.bytes_per_s, inter, protocols, inter.bytes_per_s)


def send_recv_s(
    payload_bytes: Num,
    system: SystemSpec,
    protocols: tuple[Protocol, ...] = IDEAL_PROTOCOLS,
    cross_node: bool = False,
) -> Num:
    """Point-to-point send of `payload_bytes` (pipeline stages): one hop on the link between."""
    link = system.inter_node if cross_node and system.inter_node else system.intra_node
    return phase_s(1, payload_bytes, link, protocols, link.bytes_per_s)
