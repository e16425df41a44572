"""Energy per output token and tokens per joule, from a prediction's priced operators and a
documented board-power model; the electricity part of $/Mtok.

Power model (per GPU, while a phase runs):
    P = P_idle + (P_TDP − P_idle) · u,    u = min(1, u_compute + MEMORY_POWER_SHARE · u_memory)
with u_compute = compute time / op time (the share of the tensor-core peak the op sustains) and
u_memory = memory time / op time (the share of HBM bandwidth), each op weighted by its time in
the phase. Board power is linear in utilisation between idle and the power limit, the model of
Fan, Weber and Barroso 2007 ("Power provisioning for a warehouse-sized computer", §4.1: P_idle +
(P_busy − P_idle)·u fits measured servers within 1 %) applied per GPU; the limit is the board's
TDP (GPUSpec.tdp_watts, cited per preset), which GPUs enforce by clocking down.

Assumptions, labelled as such until measured power calibrates them:
- MEMORY_POWER_SHARE = 0.5: an op streaming HBM at full bandwidth with idle tensor cores draws
  half the dynamic range. Memory-bound decode draws well under TDP while compute-bound prefill
  reaches it (Patel et al. 2024, "Splitwise", ISCA'24, §III-F: the token phase leaves power
  headroom the prompt phase does not).
- Idle (a CUDA context, no work) is GPUSpec.idle_watts where a preset gives it, else
  IDLE_FRACTION_OF_TDP of the TDP (~70 W of a 700 W H100 SXM, as nvidia-smi reports it).
- Communication ops count at idle power (copy engines and NVLink draw little of the board).
Whole-server power (CPUs, NICs, cooling: PUE) is outside the GPU board and not included.

Measured power: the validator records board power next to the timings in a column named
MEASURED_POWER_COLUMN (watts, `nvidia-smi --query-gpu=power.draw` sampled while a kernel runs);
fitting MEMORY_POWER_SHARE and the idle figure against it is the calibration hook.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.spec import GPUSpec
from rooflens.model.predict.steps import PhaseResult, Prediction

MEMORY_POWER_SHARE = 0.5
IDLE_FRACTION_OF_TDP = 0.1
MEASURED_POWER_COLUMN = "power_w"
JOULES_PER_KWH = 3.6e6
TOKENS_PER_MILLION = 1e6


@dataclass(frozen=True)
class Energy:
    """Energy of one prediction's requests (the whole batch, every GPU), and per output token."""

    idle_w: float  # per GPU
    tdp_w: float  # per GPU
    prefill_power_w: float  # per GPU, mean while prefilling
    decode_power_w: float  # per GPU, mean while decoding
    energy_j: float  # all GPUs, prefill + decode of the batch
    joules_per_output_token: float
    output_tokens_per_joule: float
    electricity_usd_per_million_tokens: float | None  # None without a $/kWh price

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def board_power_w(gpu: GPUSpec) -> tuple[float, float]:
    """(idle, TDP) watts of one board; a one-line error when the preset has no TDP."""
    if gpu.tdp_watts is None:
        raise RooflensError(f"GPU '{gpu.id}' has no tdp_watts: add it (with a source) for energy")
    idle = gpu.idle_watts if gpu.idle_watts is not None else IDLE_FRACTION_OF_TDP * gpu.tdp_watts
    return idle, gpu.tdp_watts


def utilisation(phase: PhaseResult) -> float:
    """Time-weighted dynamic-power fraction u of a phase's operators (module docstring)."""
    busy = weighted = 0.0
    for p in phase.priced:
        time = float(np.mean(p.total_s))
        if time <= 0:
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            u_compute = float(np.mean(np.divide(p.compute_s, p.time_s)))
            u_memory = float(np.mean(np.divide(p.memory_s, p.time_s)))
        u = 0.0 if p.op.kind == "comm" else min(1.0, u_compute + MEMORY_POWER_SHARE * u_memory)
        busy += time
        weighted += time * (u if math.isfinite(u) else 0.0)
    return weighted / busy if busy else 0.0


def electricity_usd_per_million_tokens(joules_per_token: float, usd_per_kwh: float) -> float:
    """$ per 10⁶ output tokens of board energy at a $/kWh tariff: J/token × 10⁶ / 3.6e6 J/kWh."""
    return joules_per_token * TOKENS_PER_MILLION / JOULES_PER_KWH * usd_per_kwh


def energy(pred: Prediction, usd_per_kwh: float = 0.0) -> Energy:
    """Energy of the prediction's batch: prefill for TTFT, then decode for the rest of e2e, on
    every GPU of the replica (TP × PP), at the power model's phase powers."""
    if not (0 <= usd_per_kwh < math.inf):
        raise RooflensError(
            f"electricity price must be a finite number ≥ 0 $/kWh, got {usd_per_kwh}"
        )
    sc = pred.scenario
    idle, tdp = board_power_w(sc.gpu)
    prefill_w = idle + (tdp - idle) * utilisation(pred.prefill)
    decode_w = idle + (tdp - idle) * utilisation(pred.decode)
    decode_s = max(pred.e2e_s - pred.ttft_s, 0.0)
    joules = sc.parallel.n_gpus * (pred.ttft_s * prefill_w + decode_s * decode_w)
    tokens = sc.workload.batch * sc.workload.output_len
    per_token = joules / tokens
    return Energy(
        idle_w=idle,
        tdp_w=tdp,
        prefill_power_w=prefill_w,
        decode_power_w=decode_w,
        energy_j=joules,
        joules_per_output_token=per_token,
        output_tokens_per_joule=1.0 / per_token if per_token > 0 else math.inf,
        electricity_usd_per_million_tokens=(
            electricity_usd_per_million_tokens(per_token, usd_per_kwh) if usd_per_kwh else None
        ),
    )
