"""`offload:fraction=F[,overlap=true]`: a fraction of the weights lives in host memory and
streams to the GPU over PCIe every forward step.

Mechanism (Sheng et al. 2023, "FlexGen", §4; Hugging Face Accelerate/DeepSpeed-Inference
offload). The GPU holds (1 − F) of the weights plus a staging buffer; each step copies the
offloaded part of every layer host → device before the layer runs. With overlap (prefetching
layer i+1 while layer i computes, double-buffered staging) a step takes the longer of the GPU
work and the copy; without it, their sum.

Formulas, per step with W the weight bytes the step reads and G the GPU time of the step:
    host_s = F · W / PCIe bytes/s (one direction, GPUSpec.pcie_bytes_per_s)
    step_s = max(G, host_s) with overlap, G + host_s without (FlexGen's cost model, §4.2)
    weights on GPU = (1 − F) · W_total + staging, staging = F · W_total / layers (× 2 overlapped)
Decode reads all weights every step, so at PCIe's ~32–64 GB/s against HBM's 2–5 TB/s even a few
per cent offloaded dominates TPOT; prefill amortises the copy over B·P tokens.

With draft-and-verify decoding (speculative, Medusa, lookahead: order 80–82) the copy is charged
on the whole iteration they build, so it runs after them: the target's weights cross PCIe once
per iteration (one verify step); a speculative draft's weights stay on the GPU (its memory is
added whole, speculative.py) and are not copied.

Limits: the copy is charged on the step, not on operators (the operator table shows GPU work
only); pinned host memory at full PCIe rate is assumed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rooflens.io.units import fmt_time
from rooflens.model.optimizations._timing import decode_tpot_s, scalar_timing
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.steps import MemoryBreakdown, Prediction, StepPricer, StepTiming
from rooflens.model.pricing.roofline import PricedOp

if TYPE_CHECKING:
    from rooflens.model.ops.op import Num
    from rooflens.model.predict.scenario import Scenario


def weight_bytes_read(priced: list[PricedOp]) -> Num:
    """Target weight bytes a step reads (per step; arrays over the decode grid); a speculative
    draft's rows (phase `draft`) read weights that stay on the GPU."""
    total: Num = 0.0
    for p in priced:
        if p.op.phase != "draft":
            total = total + p.op.weight_bytes * p.op.count
    return total


class Offload(Optimization):
    name = "offload"
    summary = "keep a fraction of the weights in host memory, streamed over PCIe every step"
    citation = "Sheng et al. 2023, FlexGen (arXiv:2303.06865) §4"
    order = 85  # after every table transform and step structure: the final iteration's copy
    params: ClassVar[dict[str, Param]] = {
        "fraction": Param(float, 0.5, "share of the weights held in host memory, F", lo=0, hi=1),
        "overlap": Param(bool, True, "prefetch the next layer while this one computes"),
    }

    def combine(self, gpu_s: Num, host_s: Num) -> Num:
        return np.maximum(gpu_s, host_s) if self["overlap"] else gpu_s + host_s

    def memory(self, mem: MemoryBreakdown, sc: Scenario) -> MemoryBreakdown:
        F = self["fraction"]
        staging = F * mem.weights_bytes / sc.model.n_layers * (2 if self["overlap"] else 1)
        return replace(mem, weights_bytes=(1 - F) * mem.weights_bytes + staging)

    def timing(self, t: StepTiming, sc: Scenario, pipeline: StepPricer) -> StepTiming:
        """step_s = max(G, F·W/PCIe) (or the sum without overlap) for prefill and decode."""
        F = self["fraction"]
        if F == 0.0:
            return t
        link = sc.gpu.pcie_bytes_per_s
        prefill_host_s = F * weight_bytes_read(t.prefill_priced) / link
        decode_host_s = F * weight_bytes_read(t.decode_priced) / link
        return replace(
            t,
            prefill_s=self.combine(t.prefill_s, prefill_host_s),
            decode_step_s=self.combine(t.decode_step_s, decode_host_s),
        )

    def result(self, pred: Prediction, sc: Scenario, pipeline: StepPricer) -> Prediction:
        F = self["fraction"]
        if F == 0.0:
            return pred
        link = sc.gpu.pcie_bytes_per_s
        t = self.timing(scalar_timing(pred, pipeline), sc, pipeline)
        ttft = float(t.prefill_s)
        O = sc.workload.output_len
        tpot = decode_tpot_s(t, pipeline) if O > 1 else pred.tpot_s
        prefill_host_s = F * float(weight_bytes_read(pred.prefill.priced)) / link
        note = (
            f"offload: {F:.0%} of the weights cross PCIe each step "
            f"({fmt_time(prefill_host_s)} per step at {link / 1e9:.0f} GB/s, "
            f"{'overlapped with' if self['overlap'] else 'added to'} GPU work)"
        )
        return replace(
            pred,
            prefill=replace(pred.prefill, time_s=ttft),
            decode=replace(pred.decode, time_s=tpot),
            ttft_s=ttft,
            tpot_s=tpot,
            e2e_s=ttft + tpot * (O - 1),
            notes=[*pred.notes, note],
            timing=t,
        )
