"""Fit calibrated pricing profiles from measurement tables (`rooflens calibrate fit`).

Per GPU and operator kind the fit finds the `KindEfficiency` terms of hardware/profiles.py
(achieved compute and bandwidth fractions, the floor per kernel launch, overlap power, latency
per wave of thread blocks, blocks per SM that saturate bandwidth, and for GEMMs the share of
tile and wave padding paid; formula: model/pricing/roofline.py) minimising the weighted mean of
|log(predicted / measured)| over the kind's rows, each implementation (engine or kernel
library) weighted equally (for attention, each implementation and decade of bytes moved), rows
faster than the hardware's peak left out (cache effects, not kernels: the measurements'
README). Attention kinds are fitted on the frontier of validate/frontier.py (per shape, the
fastest implementation that measured it): engines ship different attention kernels (1.4x apart
at large KV on the A100) and the profile describes the best available one. For the same reason
the `moe` kind is fitted on the fused-MoE shapes that ran a tuned kernel config (vLLM ships one
per device and shape; untuned shapes run ~2x slower at large token counts on the A100,
validate/moe_configs.py); its error on every subset is recorded. The model
priced during the fit is `model.pricing.price_op` on the ops of model/pricing/kernel_table.py, the
path `kernels predict` and the operator table price through, so a fitted profile reproduces
its fit error exactly wherever it is applied. Kinds with no compute roof in practice fit the
bandwidth fraction, overhead and eager SM-side roof only (elementwise, embedding), plus the grid
terms for norms (one program per row); where one GPU's eager rows cannot tell the SM-side roof
from the HBM fraction, the HBM roof is a device copy's unless the rows clearly say otherwise.

GPUs without measurements: `generic.yaml` is one fit pooled over every measured GPU, each row
priced with its own GPU's datasheet (peaks, bandwidth, SM count) and each GPU weighted equally,
so its terms are the dimensionless fractions and the latencies that carry across GPUs; a GEMM's
or fused MoE's rows at the bandwidth its GPU's memory system reaches relative to the pool's
(validate/stream_scale.py), so a family measured on some GPUs only does not carry theirs. A GPU's
own file takes the kinds it has data for; its other kinds come from the generic fit.

What each kind fits (rows, terms, starts, the copy prior) is validate/fit_terms.py; this
module owns the search of one kind and its error diagnostics; validate/profile_fit.py puts
the kinds, kernel families and engines together into the profile files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import COPY_FRACTION, KindEfficiency, Profile
from rooflens.hardware.spec import SystemSpec
from rooflens.hardware.systems import default_system
from rooflens.model.pricing.kernel_table import Batch, batches, predict_frame
from rooflens.model.pricing.l2_resident import REPLAY_COPIES
from rooflens.model.pricing.roofline import price_op
from rooflens.validate.fit_terms import (
    COPY_PRIOR_TOLERANCE,
    EAGER_ROOF_TERMS,
    FIT_EVALS,
    FRONTIER_KINDS,
    L2_TERM,
    SERIES_TERM,
    START,
    TUNED_KINDS,
    Calls,
    base_kind,
    floor_start,
    interior,
    kind_rows,
    roof_start,
    sample_rows,
    terms_for,
    to_params,
    to_vector,
)
from rooflens.validate.frontier import best_of_impls, default_kernel
from rooflens.validate.moe_configs import SUBSET_COLUMN, UNTUNED
from rooflens.validate.optimize import minimise
from rooflens.validate.single_row_fit import SINGLE_ROW_TERM, single_row_cycles
from rooflens.validate.stream_scale import STREAM_KINDS, scaled_gpu

Scales = dict[str, float] | None  # a pooled fit's bandwidth scale per GPU (stream_scale.py)


@dataclass
class Chunk:
    """The rows of one GPU for one kind, grouped into array Ops, with weights and targets."""

    system: SystemSpec
    batches: list[Batch]
    measured_s: np.ndarray
    weight: np.ndarray


def _chunk(rows: pd.DataFrame, by_size: bool = False, scales: Scales = None) -> Chunk:
    """Rows of one GPU; every implementation weighs the same (so an engine with more rows does
    not dominate), and with `by_size` every (implementation, decade of bytes moved) cell.
    `scales`: a pooled fit's bandwidth scale per GPU (validate/stream_scale.py)."""
    rows = rows.reset_index(drop=True)
    system = default_system(scaled_gpu(get_gpu(str(rows["gpu"].iloc[0])), scales))
    groups = batches(rows, system.gpu)  # the operator table's ops, on this GPU's grid
    nbytes = np.ones(len(rows))
    for b in groups:
        nbytes[b.index] = np.broadcast_to(b.op.bytes, b.index.shape)
    decade = np.floor(np.log10(np.maximum(nbytes, 1.0))).astype(int).astype(str)
    cell = rows["impl"].astype(str) + ("/" + decade if by_size else "")
    weight = 1.0 / cell.map(cell.value_counts()).to_numpy(dtype=float)
    return Chunk(system, groups, rows["measured_s"].to_numpy(float), weight / weight.sum())


def predicted_s(chunk: Chunk, eff: KindEfficiency, kind: str) -> np.ndarray:
    profile = Profile(name="fit", kinds={kind: eff}, source="candidate")
    out = np.empty(len(chunk.measured_s))
    for b in chunk.batches:
        out[b.index] = price_op(b.op, chunk.system, profile).time_s
    return out


def _calls(chunk: Chunk) -> Calls:
    nbytes, eager = np.zeros(len(chunk.measured_s)), np.zeros(len(chunk.measured_s), bool)
    for b in chunk.batches:
        nbytes[b.index] = np.broadcast_to(b.op.bytes, b.index.shape)
        eager[b.index] = bool(b.op.shape.get("eager"))
    return Calls(chunk.system.gpu, nbytes, chunk.measured_s, eager)


def faster_than_peak(table: pd.DataFrame) -> pd.Series:
    """Rows measured faster than the ideal roofline of their own GPU (cache effects)."""
    out = pd.Series(False, index=table.index)
    for gpu, rows in table.groupby("gpu"):
        ideal = predict_frame(rows, get_gpu(str(gpu)), "ideal")["predicted_s"]
        out[rows.index] = ideal.to_numpy() > rows["measured_s"].to_numpy()
    return out


def fit_kind(
    table: pd.DataFrame,
    kind: str,
    max_evals: int = FIT_EVALS,
    pooled: KindEfficiency | None = None,
    one_engine: bool = False,
    scales: Scales = None,
) -> tuple[KindEfficiency, dict]:
    """Fit one kind over the rows of `table` (any GPUs), each GPU weighted equally. Attention
    kinds are fitted on the frontier (validate/frontier.py): per shape, the fastest
    implementation, so the terms describe the best available kernel, not an average of two.

    With `pooled` (a GPU's own fit, given the fit pooled over all GPUs) the search starts
    from the pooled terms (and from START, kept only if clearly better). One GPU's rows cannot
    tell an SM throughput roof from an HBM fraction (either explains an eager kernel at
    0.35 TB/s); the pooled fit over GPUs of different SM-clock to bandwidth ratios can. So the
    roof that does not bind on this GPU's rows keeps its pooled value (what a fused kernel in
    the operator table gets). `one_engine`: the rows are one engine's, whose attention is
    fitted on its default kernel (frontier.py `default_kernel`), not on a frontier. `scales`:
    each GPU's bandwidth scale in a fit pooled over GPUs (validate/stream_scale.py)."""
    measured = table[kind_rows(table, kind)].reset_index(drop=True)
    frontier_stats: dict[str, Any] = {}
    rows = measured
    base = base_kind(kind)
    if base in FRONTIER_KINDS:
        pick = default_kernel if one_engine else best_of_impls
        rows, frontier_stats = pick(measured)
    if base in TUNED_KINDS and SUBSET_COLUMN in measured.columns:
        # Rows without a label (e.g. our own kernel runs) are not known to be untuned: kept.
        rows = measured[measured[SUBSET_COLUMN].ne(UNTUNED)].reset_index(drop=True)
    rows = sample_rows(rows).reset_index(drop=True)
    keep = ~faster_than_peak(rows)
    # Attention grids span five decades of KV bytes, most rows small and overhead-bound:
    # balancing the decades makes the fitted bandwidth that of the long calls that dominate
    # serving time (A100 decode: 11.5 % / 30.9 % median / p90 instead of 12.3 % / 31.6 %).
    by_size = base.startswith("attention")
    streams = scales if base in STREAM_KINDS else None  # the kinds whose streams it measured
    chunks = [_chunk(g, by_size, streams) for _, g in rows[keep].groupby("gpu")]
    if not chunks:  # every row beat the roofline: nothing to fit (the caller keeps its terms)
        return pooled or KindEfficiency(), {"rows": 0, "excluded_faster_than_peak": len(rows)}
    terms = terms_for(kind)
    default = dict(START)
    start = dict(default)
    if pooled is not None:
        start.update({t: v for t in terms if interior(t, v := getattr(pooled, t))})
    calls = [_calls(c) for c in chunks]
    if "overhead_cycles" in terms:
        default["overhead_cycles"] = floor_start(calls)
        if pooled is None or not interior("overhead_cycles", pooled.overhead_cycles):
            start["overhead_cycles"] = default["overhead_cycles"]
    roofs = [t for t in terms if t in EAGER_ROOF_TERMS]
    held: dict[str, float] = {}
    if SERIES_TERM in terms and len(chunks) < 2:
        # one GPU's rows cannot tell the SM-side rate from the compute fraction (both scale
        # every call's FLOPs alike): the fraction alone prices them (fit_terms.py SERIES_TERM)
        held[SERIES_TERM] = 0.0
        terms = tuple(t for t in terms if t != SERIES_TERM)
    if base == "gemm":
        # measured on every shape at m = 1 and 2, not searched on a sample (single_row_fit.py)
        held[SINGLE_ROW_TERM] = single_row_cycles(measured)
    stated = REPLAY_COPIES in rows.columns and rows.loc[keep, REPLAY_COPIES].notna().any()
    if L2_TERM in terms and not stated:
        held[L2_TERM] = 0.0  # no row says how its harness replayed it: the L2 rate prices none
        terms = tuple(t for t in terms if t != L2_TERM)
    if roofs and not any(c.eager.any() for c in calls):
        # no eager rows: the SM-side roof prices nothing here, so it keeps its pooled value
        held.update({t: getattr(pooled, t) if pooled is not None else 0.0 for t in roofs})
        terms, roofs = tuple(t for t in terms if t not in roofs), []
    for term in roofs:
        # On its flat side (HBM binds, the roof does not) the simplex stalls: start the roof
        # where the rows' large calls put it, and once 10x above it (HBM-bound on every GPU).
        start[term] = roof_start(calls, term)
        default[term] = 10.0 * start[term]

    def errors(eff: KindEfficiency) -> list[np.ndarray]:
        return [np.log(predicted_s(c, eff, kind) / c.measured_s) for c in chunks]

    def search(terms: tuple[str, ...], fixed: dict[str, float]) -> tuple[dict[str, float], float]:
        def objective(x: np.ndarray) -> float:
            eff = KindEfficiency(**fixed, **to_params(x, terms))
            errs = zip(chunks, errors(eff), strict=True)
            return float(np.mean([np.sum(c.weight * np.abs(e)) for c, e in errs]))

        x, fx = minimise(objective, to_vector(start, terms), max_evals=max_evals)
        if start != default:  # also from the defaults: the pooled start may sit in a worse basin
            x_dflt, f_dflt = minimise(objective, to_vector(default, terms), max_evals=max_evals)
            if f_dflt < fx - 1e-4:  # clearly better, not a tie along a direction rows ignore
                x, fx = x_dflt, f_dflt
        return {**fixed, **to_params(x, terms)}, fx

    found, fx = search(terms, held)
    if roofs:
        # One GPU's eager rows fit an HBM fraction as well as an SM-side roof: unless the rows
        # clearly say otherwise, HBM streams at a device copy's (profiles.py COPY_FRACTION).
        free = tuple(t for t in terms if t != "memory_fraction")
        at_copy, f_copy = search(free, {"memory_fraction": COPY_FRACTION})
        if f_copy <= fx + COPY_PRIOR_TOLERANCE:
            found = at_copy
    params = {k: float(f"{v:.4g}") for k, v in found.items()}
    eff = KindEfficiency(**params)
    rel = np.abs(np.exp(np.concatenate(errors(eff))) - 1.0)
    sizes: Any = rows[keep].groupby(["gpu", "impl"]).size()  # keyed (gpu, impl)
    stats = {
        "rows": int(keep.sum()),
        "excluded_faster_than_peak": int((~keep).sum()),
        "median_abs_error": round(float(np.median(rel)), 4),
        "p90_abs_error": round(float(np.quantile(rel, 0.9)), 4),
        "rows_by_gpu_impl": {f"{g}/{i}": int(n) for (g, i), n in sizes.items()},
    }
    if frontier_stats:
        stats["frontier"] = frontier_stats
        stats["bias_by_gpu_impl"] = bias_by_impl(sample_rows(measured), eff, kind)
    if base in TUNED_KINDS and SUBSET_COLUMN in measured.columns:
        stats["fitted_on"] = "moe_config tuned (validate/moe_tuned_configs.yaml)"
        labelled = measured[measured[SUBSET_COLUMN].notna()]
        if len(labelled):
            labelled = labelled[~faster_than_peak(labelled)]
            stats["error_by_config"] = error_by_config(labelled, eff, kind)
    return eff, stats


def error_by_config(rows: pd.DataFrame, eff: KindEfficiency, kind: str) -> dict[str, dict]:
    """Rows, median / p90 |predicted / measured − 1| and median bias of fitted terms on all
    rows and on each `moe_config` subset (tuned: fitted; untuned: reported)."""
    errors, names = [], []
    for _, g in rows.groupby("gpu"):  # _chunk prices one GPU's rows
        errors.append(predicted_s(_chunk(g), eff, kind) / g["measured_s"].to_numpy(float) - 1.0)
        names.append(g[SUBSET_COLUMN].fillna("unlabelled").to_numpy())
    error, labels = np.concatenate(errors), np.concatenate(names)
    out = {}
    for name in ("all", *sorted(set(labels))):
        e = error if name == "all" else error[labels == name]
        out[name] = {"rows": len(e), "median_abs_error": round(float(np.median(np.abs(e))), 4),
                     "p90_abs_error": round(float(np.quantile(np.abs(e), 0.9)), 4),
                     "bias": round(float(np.median(e)), 4)}  # fmt: skip
    return out


def bias_by_impl(rows: pd.DataFrame, eff: KindEfficiency, kind: str) -> dict[str, float]:
    """Median predicted / measured − 1 of fitted terms on each implementation's own rows
    (negative: the profile is faster than that implementation)."""
    out = {}
    for (gpu, impl), g in rows.groupby(["gpu", "impl"], sort=True):
        error = predicted_s(_chunk(g), eff, kind) / g["measured_s"].to_numpy(float) - 1.0
        out[f"{gpu}/{impl}"] = round(float(np.median(error)), 4)
    return out
