"""The serving engines' own all-reduce, and the collective an operator row prices.

Inside one node, vLLM, SGLang and TensorRT-LLM all-reduce small messages with a kernel of their
own, not NCCL's protocols (validate/custom_ar_fit.py fits it per engine and GPU on their
measured tables). Its law is model/pricing/comm.py's α-β one with the engine's switch between
its one-shot and two-stage kernels (`custom_all_reduce_s`); NCCL prices everything else.
`collective_time_s` prices a `kind="comm"` op: NCCL's protocols (comm.py), or the engine's
kernel where it runs and is faster.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import get_gpu, read_data_file
from rooflens.hardware.profiles import CALIBRATION_DIR, Profile, sibling_of
from rooflens.hardware.spec import SystemSpec
from rooflens.model.pricing.comm import (
    COLLECTIVES,
    Protocol,
    all_gather_s,
    all_reduce_s,
    all_to_all_s,
    phase_s,
    protocols_for,
    send_recv_s,
)

if TYPE_CHECKING:
    from rooflens.model.ops.op import Num, Op

# The engines' own all-reduce (validate/custom_ar_fit.py), used inside one NVLink node up to
# vLLM's CustomAllreduce default max_size of 8 MiB (vllm/distributed/device_communicators/
# custom_all_reduce.py); NCCL above it, across nodes, and over PCIe unless the GPU's own table
# measured what the engine runs there.
CUSTOM_ALLREDUCE_FILE = CALIBRATION_DIR / "comm-custom-allreduce.yaml"
CUSTOM_ALLREDUCE_MAX_BYTES = 8 * 2**20
# ... and up to 8 GPUs: vLLM's and SGLang's CustomAllreduce `_SUPPORTED_WORLD_SIZES = [2, 4, 6,
# 8]`, the sizes the measured tables cover. A larger group (TP 16 in a 72-GPU NVLink domain)
# runs NCCL.
CUSTOM_ALLREDUCE_MAX_GPUS = 8
# The engines' all-reduce runs one of two kernels (vLLM csrc/custom_all_reduce.cuh; SGLang's
# sgl-kernel port has the same switch): one stage (one-shot) on 2 GPUs at every size, on up to
# 4 below 512 KiB and on up to 8 below 256 KiB, else two (reduce-scatter, then all-gather).
# One-shot: every GPU reads each peer's whole buffer, (n - 1) · S bytes over n - 1 steps; two
# stages move the ring's 2(n - 1)/n · S over 2(n - 1) steps. (max GPUs, one-shot below bytes)
ONE_SHOT_BELOW = ((2, math.inf), (4, 512 * 2**10), (8, 256 * 2**10))
# (GPU id, compute capability) -> the measured GPU whose all-reduce table prices it, or None
_MEASURED_AS: dict[tuple[str, str | None], str | None] = {}


def _protocols(engines: dict[str, Any]) -> dict[str, Protocol]:
    return {
        name: Protocol(float(e["bandwidth_fraction"]), float(e["latency_base_scale"]),
                       float(e["latency_step_scale"]))
        for name, e in engines.items()
    }  # fmt: skip


@cache
def custom_allreduce(path: Path = CUSTOM_ALLREDUCE_FILE) -> dict[str, Protocol]:
    """Per engine, its all-reduce protocol pooled over the NVLink GPUs ({} without the file)."""
    if not path.is_file():
        return {}
    return _protocols(read_data_file(path).get("engines", {}))


@cache
def gpu_allreduce(path: Path = CUSTOM_ALLREDUCE_FILE) -> dict[str, dict[str, Protocol]]:
    """Per measured GPU and engine, the protocol fitted on that GPU's own table."""
    if not path.is_file():
        return {}
    return {gpu: _protocols(e) for gpu, e in read_data_file(path).get("gpus", {}).items()}


def allreduce_protocol(system: SystemSpec, engine: str | None) -> Protocol | None:
    """The engine's all-reduce on this system's GPU: fitted on its own table, else on the table
    of a measured GPU of the same SM design and the same kind of link (hardware/profiles.py
    `sibling_of`; NVLink or not: the A100 PCIe does not take the A100 SXM's NVLink kernel),
    else pooled over the NVLink GPUs where it has NVLink; None where the engine leaves it to
    NCCL (a PCIe part without a table of its own)."""
    gpu, per_gpu = system.gpu, gpu_allreduce()
    key = (gpu.id, gpu.compute_capability)
    if key not in _MEASURED_AS:  # every all-reduce of every step asks: look it up once per GPU
        nvlink = gpu.nvlink_bytes_per_s > 0
        alike = tuple(g for g in per_gpu if (get_gpu(g).nvlink_bytes_per_s > 0) == nvlink)
        _MEASURED_AS[key] = gpu.id if gpu.id in per_gpu else sibling_of(gpu, alike)
    measured = _MEASURED_AS[key]
    if measured is not None and engine in per_gpu[measured]:
        return per_gpu[measured][engine]
    if gpu.nvlink_bytes_per_s <= 0:
        return None
    return custom_allreduce().get(engine or "")


def one_shot_switch(n_gpus: Num) -> Any:
    """The size in bytes from which the engine's all-reduce on n GPUs runs two stages (inf:
    never: one stage on 2 GPUs at every size)."""
    n = np.asarray(n_gpus)
    below = np.zeros(np.shape(n))
    for most, size in reversed(ONE_SHOT_BELOW):  # the smallest group bound that holds wins
        below = np.where(n <= most, size, below)
    return below


def one_shot(payload_bytes: Num, n_gpus: Num) -> Any:
    """Whether the engine's all-reduce of this size on n GPUs runs its one-stage kernel."""
    return np.asarray(payload_bytes) < one_shot_switch(n_gpus)


def custom_all_reduce_terms(payload_bytes: Num, n_gpus: Num) -> tuple[Any, Any]:
    """(steps, bytes through each GPU's link) of the engine's own all-reduce: one-shot below its
    switch (ONE_SHOT_BELOW: n − 1 steps, (n − 1) · S), else two stages at the ring's 2(n − 1)
    steps and 2(n − 1)/n · S. validate/custom_ar_fit.py fits its protocols on the same terms."""
    n, size = np.asarray(n_gpus, dtype=float), np.asarray(payload_bytes, dtype=float)
    one = one_shot(size, n)
    return np.where(one, n - 1, 2 * (n - 1)), np.where(one, (n - 1) * size, 2 * (n - 1) / n * size)


def custom_all_reduce_s(payload_bytes: Num, n_gpus: int, system: SystemSpec,
                        protocol: Protocol) -> Num:  # fmt: skip
    """The engine's own all-reduce inside one node under `protocol` (custom_all_reduce_terms).
    Above the switch, never less than the one-shot kernel at the switch: the engine puts its
    switch where the two kernels cost alike, and the tables rise through it on every GPU (8
    H100s, vLLM: 7.9 us at 128 KiB one-shot, 10.8 at 256 KiB in two stages), where the law's
    two stages, a quarter of the bytes, would price a larger message below a smaller one."""
    if n_gpus <= 1:
        return 0.0 * payload_bytes
    link = system.intra_node
    steps, moved = custom_all_reduce_terms(payload_bytes, n_gpus)
    out = phase_s(steps, moved, link, (protocol,), link.bytes_per_s)
    switch = float(one_shot_switch(n_gpus))
    if 0 < switch < math.inf:  # the one-shot kernel's price at the switch, a floor above it
        at = phase_s(n_gpus - 1, (n_gpus - 1) * switch, link, (protocol,), link.bytes_per_s)
        out = np.where(np.asarray(payload_bytes) >= switch, np.maximum(out, at), out)
    return float(out) if np.ndim(payload_bytes) == 0 else out


def engine_all_reduce_s(
    payload_bytes: Num, n_gpus: int, system: SystemSpec, engine: str | None, nccl: Num
) -> Num:
    """The all-reduce a serving engine runs: its own one-node kernel where it applies (inside
    one node, up to CUSTOM_ALLREDUCE_MAX_GPUS GPUs and CUSTOM_ALLREDUCE_MAX_BYTES: on NVLink,
    or on a GPU whose own table measured it) when faster, else NCCL's."""
    protocol = allreduce_protocol(system, engine)
    if protocol is None or not 1 < n_gpus <= min(system.gpus_per_node, CUSTOM_ALLREDUCE_MAX_GPUS):
        return nccl
    own = custom_all_reduce_s(payload_bytes, n_gpus, system, protocol)
    return np.where(np.asarray(payload_bytes) <= CUSTOM_ALLREDUCE_MAX_BYTES,
                    np.minimum(own, nccl), nccl)  # fmt: skip


def collective_time_s(op: Op, system: SystemSpec, profile: Profile) -> Num:
    """Time of a `kind="comm"` op from its shape: collective, n_gpus, and optionally span_gpus
    (GPUs the whole parallel layout covers, which decides whether a hop leaves the node) and
    hierarchical (all-to-all)."""
    shape = op.shape
    kind = str(shape.get("collective", "all_reduce"))
    n = int(shape.get("n_gpus", 1))
    protocols = protocols_for(profile)
    if kind == "all_reduce":
        nccl = all_reduce_s(op.comm_bytes, n, system, protocols)
        if profile.name == "ideal":
            return nccl
        return engine_all_reduce_s(op.comm_bytes, n, system, profile.engine, nccl)
    if kind in ("all_gather", "reduce_scatter"):
        return all_gather_s(op.comm_bytes, n, system, protocols)
    if kind == "all_to_all":
        hierarchical = bool(shape.get("hierarchical", False))
        return all_to_all_s(op.comm_bytes, n, system, protocols, hierarchical)
    if kind == "send_recv":
        span = int(shape.get("span_gpus", n))
        return send_recv_s(op.comm_bytes, system, protocols, span > system.gpus_per_node)
    raise RooflensError(f"op {op.name}: unknown collective '{kind}' (one of {COLLECTIVES})")
