"""The cost pipeline (DESIGN.md): scenario -> optimizations -> operator tables -> roofline
pricing -> phase times -> TTFT, TPOT, end-to-end latency and throughput.

TTFT = prefill time (the last token's logits included; sampling is negligible at this grain).
TPOT = mean decode-step time over output tokens 2..O, step i attending over P + i positions
(DESIGN.md); it averages over the growing KV length instead of taking the final length
(model/predict/steps.py samples the decode steps; it also holds the data types this module returns).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rooflens.hardware.profiles import ENGINE_NAMES, Profile, get_profile
from rooflens.hardware.step_accuracy import step_accuracy
from rooflens.io.units import fmt_time
from rooflens.model.ops.op import Op
from rooflens.model.optimizations.base import Optimization, ordered
from rooflens.model.predict.memory import memory_breakdown
from rooflens.model.predict.operators import step_ops
from rooflens.model.predict.pp_schedule import apply_pipeline_parallel
from rooflens.model.predict.scenario import Scenario
from rooflens.model.predict.steps import (
    MemoryBreakdown,
    Prediction,
    Step,
    decode_kv_lens,
    phase_result,
)
from rooflens.model.pricing.roofline import PricedOp, price_ops, step_time_s
from rooflens.model.pricing.single_row import single_row_paths
from rooflens.model.specs.quant import SCHEMES


class Pipeline:
    """Runs a scenario through its optimizations. Build one per scenario; call `predict()`.
    `profile`: price with these terms instead of the scenario's named profile (a
    cross-validation fold's, to price a GPU with the terms that never saw it)."""

    def __init__(
        self,
        scenario: Scenario,
        optimizations: list[Optimization] | None = None,
        profile: Profile | None = None,
    ):
        self.opts = ordered(list(optimizations or []))
        sc = scenario
        for opt in self.opts:
            sc = opt.scenario(sc)
        self.scenario = sc
        self._terms = profile
        self.profile: Profile = profile or get_profile(sc.profile, sc.gpu, sc.engine)

    def step_ops(self, step: Step, sc: Scenario | None = None) -> list[Op]:
        return step_ops(sc or self.scenario, self.opts, step)

    def price_step(self, step: Step, sc: Scenario | None = None) -> list[PricedOp]:
        sc = sc or self.scenario
        return price_ops(self.step_ops(step, sc), sc.system, self.profile)

    def decode_kv_lens(self) -> np.ndarray:
        """KV lengths of decode steps 1..O−1 (token i+1 attends over P + i positions)."""
        return decode_kv_lens(self.scenario.workload)

    def memory(self) -> MemoryBreakdown:
        return memory_breakdown(self.scenario, self.opts)

    def for_scenario(self, sc: Scenario, opts: Sequence[Optimization]) -> Pipeline:
        return Pipeline(sc, list(opts), self._terms)

    def predict(self) -> Prediction:
        sc, w = self.scenario, self.scenario.workload
        B, P = float(w.batch), float(w.prompt_len)
        prefill = self.price_step(Step("prefill", B, P, P))
        prefill_s = float(step_time_s(prefill))
        kv_lens = self.decode_kv_lens()
        if kv_lens.size:
            decode = self.price_step(Step("decode", B, 1.0, kv_lens))
            decode_s = float(np.mean(step_time_s(decode)))
        else:
            decode, decode_s = self.price_step(Step("decode", B, 1.0, P + 1.0)), 0.0
        pred = Prediction(
            scenario=sc,
            prefill=phase_result("prefill", prefill, prefill_s),
            decode=phase_result("decode", decode, decode_s),
            ttft_s=prefill_s,
            tpot_s=decode_s,
            e2e_s=prefill_s + decode_s * (w.output_len - 1),
            memory=self.memory(),
            notes=_unit_notes(prefill + decode, sc, self.profile)
            + _one_row_notes(decode, sc, self.profile)
            + _accuracy_notes(sc, self.profile),
        )
        if sc.parallel.pp > 1:
            pred = apply_pipeline_parallel(pred, self)
        for opt in self.opts:
            pred = opt.result(pred, sc, self)
        return pred


def _unit_notes(priced: list[PricedOp], sc: Scenario, profile: Profile) -> list[str]:
    """Say when a compute dtype has no unit on this GPU and runs on another (GPUSpec.peak), and
    when its unit is priced below the datasheet, at the rate the engines' kernels issue
    (GPUSpec.kernel_peak; never under `ideal`)."""
    gpu = sc.gpu
    dtypes = {p.op.compute_dtype for p in priced if np.any(np.asarray(p.op.flops) > 0)}
    notes = [
        f"{gpu.id} has no {dtype} tensor-core rate in its datasheet: {dtype} math is priced at "
        f"{gpu.peak(dtype) / 1e12:.0f} TFLOP/s, the unit kernels fall back to"
        for dtype in sorted(dtypes - set(gpu.peak_flops_per_s))
    ]
    capped = {gpu.unit(d) for d in dtypes if gpu.kernel_peak(d) < gpu.peak(d)}
    notes += [
        f"{unit} math on {gpu.id} is priced at {gpu.kernel_peak(unit) / 1e12:,.0f} TFLOP/s, the "
        f"rate the engines' kernels issue, not the datasheet's {gpu.peak(unit) / 1e12:,.0f} "
        f"TFLOP/s: {gpu.sources['kernel_peak_flops_per_s'].split(';')[0]}; `ideal` keeps the "
        "datasheet"
        for unit in sorted(capped) if not profile.datasheet_peaks
    ]  # fmt: skip
    return notes


def _one_row_notes(decode: list[PricedOp], sc: Scenario, profile: Profile) -> list[str]:
    """Say when a decode step's one-row GEMMs (batch 1) pay the engine's m = 1 path, measured
    slower than two rows (model/pricing/single_row.py): a batch of 2 may step faster."""
    engine = ENGINE_NAMES.get(sc.engine, sc.engine)
    return [
        f"{engine}'s {key} GEMMs run their m = 1 path at one row a call: +{fmt_time(per_call)} a "
        f"call, {calls:.0f} calls a decode step (+{fmt_time(per_call * calls)}), as its measured "
        "kernels run m = 1 against m = 2; a batch of 2 may step faster"
        for key, (per_call, calls) in sorted(
            single_row_paths([p.op for p in decode], profile, sc.gpu).items()
        )
    ]


def _accuracy_notes(sc: Scenario, profile: Profile) -> list[str]:
    """Say how closely whole steps like this one were priced against the engine's own measured
    kernels (hardware/step_accuracy.py): in sample on a GPU the engine tables measured, held out
    elsewhere; dense models under `calibrated`, where the benchmark ran the engine and scheme."""
    if profile.name == "ideal" or sc.model.is_moe:
        return []
    found = {}
    for phase in ("prefill", "decode"):
        stats = step_accuracy(sc.gpu.id, sc.engine, sc.precision.scheme, phase)
        if stats is not None:
            found[phase] = stats
    if not found:
        return []
    held_out = next(iter(found.values())).held_out
    where = ("held out: each measured GPU priced by terms fitted without it" if held_out
             else f"in sample on {sc.gpu.id}")  # fmt: skip
    figures = "; ".join(
        f"{phase} median {100 * a.median:.1f} %, p90 {100 * a.p90:.1f} %, worst "
        f"{100 * a.worst:.0f} % over {a.steps} steps"
        for phase, a in found.items()
    )
    engine = ENGINE_NAMES.get(sc.engine, sc.engine)
    return [
        f"accuracy: dense Llama-3 steps in {SCHEMES[sc.precision.scheme].label}, priced this "
        f"way, against {engine}'s measured kernels, |error| {figures} ({where}; "
        "benchmarks/engine_steps.py)"
    ]


def predict(scenario: Scenario, optimizations: list[Optimization] | None = None) -> Prediction:
    return Pipeline(scenario, optimizations).predict()
