"""Collective communication times on a link (per-GPU bandwidth one way, latency per step)."""

from __future__ import annotations

from hardware.spec import LinkSpec
from model.ops import Num


def ring_all_reduce_s(
    payload_bytes: Num,
    n_gpus: int,
    link: LinkSpec,
    bandwidth_fraction: float = 1.0,
    latency_scale: float = 1.0,
) -> Num:
    """Ring all-reduce: 2(n−1)/n · bytes / bandwidth + 2(n−1) · latency.

    Reduce-scatter then all-gather, each n−1 steps moving bytes/n (Patarasuk & Yuan 2009;
    NCCL's "bus bandwidth" convention). One GPU needs no communication.
    """
    if n_gpus <= 1:
        return 0.0 * payload_bytes
    steps = 2 * (n_gpus - 1)
    bandwidth = link.bytes_per_s * bandwidth_fraction
    return steps / n_gpus * payload_bytes / bandwidth + steps * link.latency_s * latency_scale
