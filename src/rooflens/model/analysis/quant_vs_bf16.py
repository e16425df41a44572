"""Quantized decode against bf16 (issue 23 §4): weight-only and fp8 decode at batch ≤ 16 should
cost less than bf16 on the same GPU and engine, unless a measured table says otherwise; where
a prediction says it costs more, this module says so and names the measured tables the slower
kernel family was fitted on. The CLI (table and `--json`), the dashboard and the scenario-space
check (validate/scenario_space.py) all read `quant_slower_than_bf16`.

The bf16 twin is the same scenario (model, GPU, engine, batch, lengths, KV dtype, parallelism,
optimizations) with 16-bit weights and activations; a `quant:` preset is dropped from it. It is
priced only where it can matter: a quantized decode step (a matmul of a kernel family,
model/specs/quant.py) at batch ≤ MAX_DECODE_BATCH, under `calibrated` (`ideal` on request).

Where it costs more, `alternatives=True` (what the CLI and the dashboard ask for) also prices the
scenario under every other quantized scheme and every engine, and names those that beat the bf16
step: each one a prediction of its own, not a guess (`Alternative`). A scheme is tried only on
a GPU whose tensor cores run its matmuls natively (no FP8 scheme on an A100, no SmoothQuant on a
B300, NVFP4 on Blackwell only) and where the profile holds its kernel family's terms for every
quantized matmul of the step (no dense MXFP4: its kernels are gpt-oss's experts').

The tables come from the calibration file's provenance (hardware/calibration/<gpu>.yaml, else
generic.yaml; validate/calibrate.py writes it): `fit[<key>].rows_by_gpu_impl` lists the rows a
kind's terms were fitted on by `<gpu>/<engine>-<version>:<kernel_source>`, `inherited` names
the file pooled terms came from, and an engine's own terms (`engines[<engine>]`) were fitted
on that engine's rows only. The row keys map onto the shared measurements' layout
`aiconfigurator-<gpu>/<kind>/<engine>/<version>/<kind>_perf.parquet` (their README).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rooflens.hardware.engines import engine_refusal
from rooflens.hardware.profiles import (
    CALIBRATION_DIR,
    ENGINE_NAMES,
    ENGINES,
    calibration_path,
    get_profile,
    load_calibration,
)
from rooflens.io.units import fmt_time
from rooflens.model.optimizations.base import Optimization
from rooflens.model.predict.api import make_pipeline, parse_opts
from rooflens.model.predict.scenario import Scenario
from rooflens.model.predict.steps import Prediction
from rooflens.model.pricing.kinds import kind_key
from rooflens.model.specs.dtypes import compute_dtype
from rooflens.model.specs.quant import SCHEMES

MAX_ALTERNATIVES_SHOWN = 3  # schemes in the note, each on its cheapest engine; `to_dict`: all
MAX_DECODE_BATCH = 16  # decode at this batch and below is weight-read bound: quantization pays
REL_TOL = 1e-6  # a tie (whole tiles, whole waves) is not slower
# The measured GPUs' folders in the shared measurements (../shared/data/measured/README.md), by
# the GPU id validate/measured_files.py DEVICE_IDS gives their `device` column.
MEASURED_FOLDERS = {
    "a100-sxm-80gb": "aiconfigurator-a100",
    "h100-sxm": "aiconfigurator-h100",
    "b300": "aiconfigurator-b300",
    "rtx-pro-6000": "aiconfigurator-rtx-pro-6000",
}


@dataclass(frozen=True)
class MeasuredTable:
    """One engine's measured rows a kernel family's terms were fitted on."""

    family: str  # the profile key: `gemm:fp8`, `moe:int4_wo`, `gemm` (bf16 terms)
    table: str  # `aiconfigurator-b300/gemm/trtllm/1.3.0rc20/gemm_perf.parquet`
    version: str  # the engine version its rows record
    dtype: str  # its `gemm_dtype` / `moe_dtype`
    kernel_source: str  # the kernel the engine picked
    rows: int  # rows of it the fit used
    calibration: str  # the calibration file that records it

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Alternative:
    """A quantized scheme on an engine whose decode step beats the bf16 step, priced."""

    scheme: str  # model/specs/quant.py SCHEMES id
    engine: str
    tpot_s: float
    # the measured GPUs whose tables fitted those of its family terms that no table of the GPU
    # whose calibration file prices it fitted; () = all fitted on that GPU's own tables
    carried_from: tuple[str, ...]

    @property
    def text(self) -> str:
        where = f" (terms from {', '.join(self.carried_from)} tables)" if self.carried_from else ""
        return (f"{SCHEMES[self.scheme].label} on {ENGINE_NAMES[self.engine]} "
                f"{fmt_time(self.tpot_s)}{where}")  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {"scheme": self.scheme, "engine": self.engine, "tpot_s": self.tpot_s,
                "carried_from": list(self.carried_from)}  # fmt: skip


@dataclass(frozen=True)
class QuantSlower:
    """A quantized decode step that costs more than its bf16 twin, and why."""

    tpot_s: float
    bf16_tpot_s: float
    precision: str  # the scenario's precision in engine words
    engine: str
    families: tuple[str, ...]  # profile keys of the matmuls that got slower
    tables: tuple[MeasuredTable, ...]  # what those keys were fitted on; () = none named
    # cheapest first: the schemes and engines that beat the bf16 step (None = not searched)
    alternatives: tuple[Alternative, ...] | None = None

    @property
    def named(self) -> bool:
        return bool(self.tables)

    @property
    def note(self) -> str:
        head = (f"{self.precision} decode costs more than bf16 here ({fmt_time(self.tpot_s)} "
                f"against {fmt_time(self.bf16_tpot_s)} a step, same GPU and "
                f"{ENGINE_NAMES.get(self.engine, self.engine)} kernels)")  # fmt: skip
        if not self.named:
            why = f"{head}; no measured table says so: {', '.join(self.families) or 'no matmul'}"
        else:
            tables = "; ".join(f"{t.table} ({t.dtype}, {t.kernel_source})" for t in self.tables)
            why = f"{head}: {', '.join(self.families)} fitted on measured {tables}"
        if self.alternatives is None:
            return why
        if not self.alternatives:
            return f"{why}. No other quantized scheme or engine beats bf16 here"
        best = {a.scheme: a for a in reversed(self.alternatives)}  # each scheme's cheapest
        picked = sorted(best.values(), key=lambda a: a.tpot_s)[:MAX_ALTERNATIVES_SHOWN]
        shown = ", ".join(a.text for a in picked)
        more = len(self.alternatives) - len(picked)
        rest = f" and {more} more" if more > 0 else ""
        return f"{why}. Beats bf16 here, same KV and parallelism: {shown}{rest}"

    def to_dict(self) -> dict[str, Any]:
        return {"tpot_s": self.tpot_s, "bf16_tpot_s": self.bf16_tpot_s,
                "precision": self.precision, "engine": self.engine,
                "families": list(self.families),
                "measured_tables": [t.to_dict() for t in self.tables],
                "alternatives": None if self.alternatives is None
                else [a.to_dict() for a in self.alternatives]}  # fmt: skip


def quant_slower_than_bf16(
    pred: Prediction,
    opts: Sequence[str | Optimization] = (),
    profiles: tuple[str, ...] = ("calibrated",),
    alternatives: bool = False,
) -> QuantSlower | None:
    """What a quantized decode step costlier than bf16 is fitted on; None where it is not
    costlier, or not checked (no quantized matmul, batch > MAX_DECODE_BATCH, no decode step,
    a profile outside `profiles`). `opts`: the optimizations `pred` was run with;
    `alternatives`: also price the schemes and engines that beat the bf16 step (`beats_bf16`)."""
    sc = pred.scenario
    quantized = [p for p in pred.decode.priced if p.op.shape.get("family")]
    if (sc.profile not in profiles or not quantized or sc.workload.batch > MAX_DECODE_BATCH
            or sc.workload.output_len < 2):  # fmt: skip
        return None
    others = [o for o in parse_opts(opts) if o.name != "quant"]  # the twins set the precision
    twin = make_pipeline(scheme_twin(sc, "bf16"), others).predict()
    if pred.tpot_s <= twin.tpot_s * (1 + REL_TOL):
        return None
    before = {p.op.name: float(np.mean(p.total_s)) for p in twin.decode.priced}
    profile = get_profile(sc.profile, sc.gpu, sc.engine)
    families = sorted({kind_key(profile, p.op) for p in quantized
                       if float(np.mean(p.total_s)) > before.get(p.op.name, 0.0)})  # fmt: skip
    named = sc.profile == "calibrated"  # `ideal` is fitted on nothing
    path = calibration_path(sc.gpu)
    tables = [t for f in families for t in fitted_on(path, sc.engine, f)] if named else []
    better = beats_bf16(sc, others, twin.tpot_s) if alternatives else None
    return QuantSlower(pred.tpot_s, twin.tpot_s, sc.precision.text, sc.engine,
                       tuple(families), tuple(tables), better)  # fmt: skip


def scheme_twin(sc: Scenario, scheme: str, engine: str | None = None) -> Scenario:
    """The scenario with every matmul (experts too) in a SCHEMES precision, on `engine` (default:
    its own); the rest unchanged: model, GPU, batch, lengths, KV dtype, parallelism."""
    s = SCHEMES[scheme]
    precision = sc.precision.model_copy(update={"weight_dtype": s.weight_dtype,
                                                "act_dtype": s.act_dtype,
                                                "expert_weight_dtype": "", "scheme": scheme,
                                                "native": False})  # fmt: skip
    return sc.model_copy(update={"precision": precision, "engine": engine or sc.engine})


def beats_bf16(sc: Scenario, opts: Sequence[Optimization], bf16_tpot_s: float) -> tuple[
        Alternative, ...]:  # fmt: skip
    """Every quantized scheme on every engine that runs on the GPU (ENGINE_VENDORS) whose decode
    step, priced like `sc`'s (same profile and optimizations), costs less than `bf16_tpot_s`
    and fits: cheapest first. Only
    schemes whose matmuls run natively on the GPU's tensor cores (spec.py `unit`: no upcast)
    and whose kernel family the profile holds terms for on every quantized matmul."""
    native = [k for k, s in SCHEMES.items() if k != "bf16" and _runs_natively(sc, k)]
    path = calibration_path(sc.gpu)
    out = []
    for engine in (e for e in ENGINES if engine_refusal(e, sc.gpu) is None):
        profile = get_profile(sc.profile, sc.gpu, engine)
        for scheme in native:
            pred = make_pipeline(scheme_twin(sc, scheme, engine), opts).predict()
            keys = {kind_key(profile, p.op) for p in pred.decode.priced
                    if p.op.shape.get("family")}  # fmt: skip
            if not keys or any(":" not in k for k in keys):  # no terms of its kernel family
                continue
            if pred.tpot_s < bf16_tpot_s * (1 - REL_TOL) and pred.memory.fits:
                own = MEASURED_FOLDERS.get(path.stem)
                folders = [{t.table.split("/")[0] for t in fitted_on(path, engine, k)}
                           for k in keys]  # fmt: skip
                carried = tuple(sorted({_gpu_of(f) for fs in folders if own not in fs
                                        for f in fs}))  # fmt: skip
                out.append(Alternative(scheme, engine, pred.tpot_s, carried))
    return tuple(sorted(out, key=lambda a: a.tpot_s))


def _runs_natively(sc: Scenario, scheme: str) -> bool:
    s = SCHEMES[scheme]
    unit = compute_dtype(s.weight_dtype, s.act_dtype)
    return unit in sc.gpu.peak_flops_per_s and sc.gpu.unit(unit) == unit


def _gpu_of(folder: str) -> str:
    return next(g for g, f in MEASURED_FOLDERS.items() if f == folder)


def fitted_on(path: Path, engine: str, key: str) -> list[MeasuredTable]:
    """The measured tables the `calibrated` terms `key` of a calibration file (a GPU's:
    hardware/profiles.py calibration_path) were fitted on for this engine, read from its
    provenance (the module docstring); [] where none is recorded."""
    own = key in load_calibration(path).engines.get(engine, {})
    fit = load_calibration(path).provenance.get("fit", {}).get(key, {})
    if "inherited" in fit:  # pooled terms copied from another file (generic.yaml)
        path = CALIBRATION_DIR / fit["inherited"]
        own = False
        fit = load_calibration(path).provenance.get("fit", {}).get(key, {})
    kind, _, dtype = key.partition(":")
    out = []
    for row_key, rows in sorted(fit.get("rows_by_gpu_impl", {}).items()):
        gpu, _, impl = row_key.partition("/")
        engine_version, _, kernel = impl.partition(":")
        row_engine, _, version = engine_version.partition("-")
        if gpu not in MEASURED_FOLDERS or row_engine not in ENGINES or not version:
            continue  # not an engine's table (vidur's eager PyTorch, a frontier of impls)
        if own and row_engine != engine:
            continue  # the engine's own terms: its rows only
        # a development build's rows sit in a release's folder (vLLM's Marlin MXFP4 MoE on the
        # B300, in moe/vllm/0.24.0): the folder is not in the row, so it is left a wildcard
        folder = "*" if ".dev" in version else version
        table = f"{MEASURED_FOLDERS[gpu]}/{kind}/{row_engine}/{folder}/{kind}_perf.parquet"
        out.append(MeasuredTable(key, table, version, dtype or "bfloat16", kernel, int(rows),
                                 path.name))  # fmt: skip
    return out
