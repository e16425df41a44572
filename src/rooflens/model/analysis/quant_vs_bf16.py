"""Quantized decode against bf16 (issue 23 §4): weight-only and fp8 decode at batch ≤ 16 should
cost less than bf16 on the same GPU and engine, unless a measured table says otherwise; where
a prediction says it costs more, this module says so and names the measured tables the slower
kernel family was fitted on. The CLI (table and `--json`), the dashboard and the scenario-space
check (validate/scenario_space.py) all read `quant_slower_than_bf16`.

The bf16 twin is the same scenario (model, GPU, engine, batch, lengths, KV dtype, parallelism,
optimizations) with 16-bit weights and activations; a `quant:` preset is dropped from it. It is
priced only where it can matter: a quantized decode step (a matmul of a kernel family,
model/specs/quant.py) at batch ≤ MAX_DECODE_BATCH, under `calibrated` (`ideal` on request).

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
class QuantSlower:
    """A quantized decode step that costs more than its bf16 twin, and why."""

    tpot_s: float
    bf16_tpot_s: float
    precision: str  # the scenario's precision in engine words
    engine: str
    families: tuple[str, ...]  # profile keys of the matmuls that got slower
    tables: tuple[MeasuredTable, ...]  # what those keys were fitted on; () = none named

    @property
    def named(self) -> bool:
        return bool(self.tables)

    @property
    def note(self) -> str:
        head = (f"{self.precision} decode costs more than bf16 here ({fmt_time(self.tpot_s)} "
                f"against {fmt_time(self.bf16_tpot_s)} a step, same GPU and "
                f"{ENGINE_NAMES.get(self.engine, self.engine)} kernels)")  # fmt: skip
        if not self.named:
            return f"{head}; no measured table says so: {', '.join(self.families) or 'no matmul'}"
        tables = "; ".join(f"{t.table} ({t.dtype}, {t.kernel_source})" for t in self.tables)
        return f"{head}: {', '.join(self.families)} fitted on measured {tables}"

    def to_dict(self) -> dict[str, Any]:
        return {"tpot_s": self.tpot_s, "bf16_tpot_s": self.bf16_tpot_s,
                "precision": self.precision, "engine": self.engine,
                "families": list(self.families),
                "measured_tables": [t.to_dict() for t in self.tables]}  # fmt: skip


def quant_slower_than_bf16(
    pred: Prediction,
    opts: Sequence[str | Optimization] = (),
    profiles: tuple[str, ...] = ("calibrated",),
) -> QuantSlower | None:
    """What a quantized decode step costlier than bf16 is fitted on; None where it is not
    costlier, or not checked (no quantized matmul, batch > MAX_DECODE_BATCH, no decode step,
    a profile outside `profiles`). `opts`: the optimizations `pred` was run with."""
    sc = pred.scenario
    quantized = [p for p in pred.decode.priced if p.op.shape.get("family")]
    if (sc.profile not in profiles or not quantized or sc.workload.batch > MAX_DECODE_BATCH
            or sc.workload.output_len < 2):  # fmt: skip
        return None
    bf16 = make_pipeline(bf16_twin(sc), [o for o in parse_opts(opts) if o.name != "quant"])
    twin = bf16.predict()
    if pred.tpot_s <= twin.tpot_s * (1 + REL_TOL):
        return None
    before = {p.op.name: float(np.mean(p.total_s)) for p in twin.decode.priced}
    profile = get_profile(sc.profile, sc.gpu, sc.engine)
    families = sorted({kind_key(profile, p.op) for p in quantized
                       if float(np.mean(p.total_s)) > before.get(p.op.name, 0.0)})  # fmt: skip
    named = sc.profile == "calibrated"  # `ideal` is fitted on nothing
    path = calibration_path(sc.gpu)
    tables = [t for f in families for t in fitted_on(path, sc.engine, f)] if named else []
    return QuantSlower(pred.tpot_s, twin.tpot_s, sc.precision.text, sc.engine,
                       tuple(families), tuple(tables))  # fmt: skip


def bf16_twin(sc: Scenario) -> Scenario:
    """The scenario with 16-bit weights (experts too) and activations; the rest unchanged."""
    precision = sc.precision.model_copy(update={"weight_dtype": "bf16", "act_dtype": "bf16",
                                                "expert_weight_dtype": "", "scheme": "bf16",
                                                "native": False})  # fmt: skip
    return sc.model_copy(update={"precision": precision})


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
