"""`eager-launch:per_launch_us=U`: the engine runs its steps eagerly (no CUDA graphs), so the
host's time to issue every kernel is a term of the step, priced on its own (not folded into
kernel efficiency: issue 11 §2).

Mechanism (PyTorch blog, "Accelerating PyTorch with CUDA Graphs", 2021; vLLM engine arguments,
`--enforce-eager`: "always use eager-mode PyTorch; if False, use CUDA graph and eager execution
in hybrid"). In eager mode the CPU pays a roughly fixed cost per kernel (Python, the
dispatcher, the launch call) whatever its size; a captured graph replays the whole step from one
launch. The host runs ahead of the GPU through the launch queue, so a step takes the longer of
the two: only host time beyond the device's shows (model/pricing/host.py `exposed_host_s`).

Formulas, per prefill step and per decode step (arrays over a grid of batches or KV lengths):
    launches  = model/pricing/host.py `step_launches` (Σ count × kernels per call; split-KV adds
    one)
    host_s    = launches · U
    step_s    = max(device_s, host_s) = device_s + max(0, host_s − device_s)
    the lesser of that step with decode attention split as priced and unsplit (one launch fewer
    per split call, the unsplit grid's device time): `unsplit_if_host_bound`
The exposed part is a row of its own in the operator table (name and kind `host`, bound
`host`), so the rows still sum to the step. Without this optimization (the default) steps are
graph-captured, as every fast serving engine runs decode, and nothing changes. Small steps are
where it bites: llama-3-8b at batch 1 on an H100 issues 355 kernels a decode step (10 a layer,
11 with split-KV attention, + 3), 2.66 ms at 7.5 µs, hidden under its 4.6 ms of weight reads;
a 1B model, narrower weights or a slower host (20 µs a launch) make the step host-bound.

It runs after the step-structure optimizations (speculative, Medusa, lookahead) and offload, so
the launches it charges are those of the whole iteration they build: a speculative draft's γ
steps issue their kernels too.

Limits: U is one number per kernel (measure it with `rooflens validate e2e`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rooflens.io.units import fmt_time
from rooflens.model.ops.op import Num, Op
from rooflens.model.optimizations._timing import decode_tpot_s, scalar_timing
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.steps import Prediction, StepPricer, StepTiming
from rooflens.model.pricing.host import (
    EAGER_LAUNCH_S,
    HOST_OP,
    exposed_host_s,
    step_launches,
    unsplit_if_host_bound,
)
from rooflens.model.pricing.roofline import PricedOp, step_time_s

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario


def host_row(phase: str, exposed_s: Num) -> PricedOp:
    """The operator-table row carrying a step's exposed host time (no FLOPs, no bytes)."""
    op = Op(name=HOST_OP, phase=phase, kind=HOST_OP, count=1, flops=0.0, weight_bytes=0.0,
            act_bytes=0.0, kv_bytes=0.0, compute_dtype="fp32")  # fmt: skip
    return PricedOp(op, 0.0, 0.0, 0.0, exposed_s)


def with_host(priced: list[PricedOp], device_s: Num, per_launch_s: float) -> tuple[Num, Num]:
    """(host seconds, exposed host seconds) of one step's priced table."""
    host_s = step_launches(p.op for p in priced) * per_launch_s
    return host_s, exposed_host_s(host_s, device_s, overlapped=True)


class EagerLaunch(Optimization):
    name = "eager-launch"
    summary = "the engine runs steps eagerly (no CUDA graphs): each step costs max(GPU, host)"
    citation = "PyTorch blog 2021, Accelerating PyTorch with CUDA Graphs; vLLM --enforce-eager"
    order = 87  # after offload (85): the GPU step it hides behind includes the weight copy
    params: ClassVar[dict[str, Param]] = {
        "per_launch_us": Param(
            float,
            EAGER_LAUNCH_S * 1e6,
            "host time to issue one kernel eagerly, µs",
            lo=0,
            lo_open=True,
            hi=1000,
        ),
    }

    def timing(self, t: StepTiming, sc: Scenario, pipeline: StepPricer) -> StepTiming:
        """Each step takes max(device, launches × per-launch); the excess is a `host` row."""
        per = self["per_launch_us"] * 1e-6
        system, profile = pipeline.scenario.system, pipeline.profile
        prefill_priced, prefill_s = unsplit_if_host_bound(t.prefill_priced, t.prefill_s, per,
                                                          system, profile, True)  # fmt: skip
        decode_priced, decode_s = unsplit_if_host_bound(t.decode_priced, t.decode_step_s, per,
                                                        system, profile, True)  # fmt: skip
        _, pre_exposed = with_host(prefill_priced, prefill_s, per)
        _, dec_exposed = with_host(decode_priced, decode_s, per)
        if np.any(np.asarray(pre_exposed) > 0):
            prefill_priced = [*prefill_priced, host_row("prefill", pre_exposed)]
        if np.any(np.asarray(dec_exposed) > 0):
            decode_priced = [*decode_priced, host_row("decode", dec_exposed)]
        return replace(
            t,
            prefill_priced=prefill_priced,
            decode_priced=decode_priced,
            prefill_s=prefill_s + pre_exposed,
            decode_step_s=decode_s + dec_exposed,
        )

    def result(self, pred: Prediction, sc: Scenario, pipeline: StepPricer) -> Prediction:
        base = scalar_timing(pred, pipeline)
        t = self.timing(base, sc, pipeline)
        O = sc.workload.output_len
        ttft = float(t.prefill_s)
        tpot = decode_tpot_s(t, pipeline) if O > 1 else pred.tpot_s
        per = self["per_launch_us"] * 1e-6
        notes = [self._note(phase, [p for p in priced if p.op.kind != HOST_OP], per)
                 for phase, priced in (("prefill", t.prefill_priced),
                                       ("decode", t.decode_priced))]  # fmt: skip
        return replace(
            pred,
            prefill=replace(pred.prefill, priced=t.prefill_priced, time_s=ttft),
            decode=replace(pred.decode, priced=t.decode_priced, time_s=tpot),
            ttft_s=ttft,
            tpot_s=tpot,
            e2e_s=ttft + tpot * (O - 1),
            notes=[*pred.notes, *notes],
            timing=t,
        )

    def _note(self, phase: str, priced: list[PricedOp], per: float) -> str:
        """What the host costs one step of the table as priced (after unsplit_if_host_bound)."""
        device_s = float(np.mean(step_time_s(priced)))
        n = float(np.mean(step_launches(p.op for p in priced)))
        host_s = n * per
        head = (
            f"eager-launch: {phase} step issues {n:.0f} kernels × {fmt_time(per)} = "
            f"{fmt_time(host_s)} of host time vs {fmt_time(device_s)} on the GPU"
        )
        if host_s > device_s:
            return (
                f"{head}: host-bound, +{fmt_time(host_s - device_s)} a step "
                f"({host_s / device_s:.2f}x the GPU's time); CUDA graphs would hide it"
            )
        return f"{head}: the GPU hides it"
