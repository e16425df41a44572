"""The physics a prediction must hold anywhere in the scenario space (issue 23 §4), checked on one
scenario at a time through the Python API the faces call:

- it predicts (a one-line refusal, `RooflensError`, is a refusal, anything else a crash) and
  its JSON holds finite numbers only;
- a step never gets faster with more work: TTFT and TPOT at twice the batch, and at twice the
  prompt, are never lower;
- the KV cache is linear in the batch; weights per GPU are ∝ 1/TP (while TP ≤ the KV heads, so
  no K/V projection is replicated);
- weight-only int4 and int8, SmoothQuant and fp8 (per-tensor or block) decode at batch ≤ 16
  never cost more than bf16 on the same GPU and engine (model/analysis/quant_vs_bf16.py prices
  the bf16 twin), unless a measured table says they do: under `calibrated` a slower step whose
  kernel family names the tables it was fitted on is recorded (`quant_named`), one that names
  none is a finding (`quant`; a violation of physics where the profile is in `quant_profiles`,
  and always under `ideal`, fitted on nothing);
- no operator priced by `calibrated` at more than MAX_CALIBRATED_OVER_IDEAL × its `ideal` time
  while it holds more than MIN_SHARE of its step. The calibrated time is taken above its fixed
  floor (the per-launch overhead and one wave's latency, model/pricing/roofline.py; for a
  collective its protocol's latency, model/pricing/comm.py, where `ideal` charges one hop of
  the link's hardware floor): a launch costs microseconds however small the call, where `ideal`
  charges nothing, so a 1-token attention is thousands of times its ideal time and rightly so;
  what the check catches is a term that scales wrongly (a per-head norm charged one wave per 132
  heads: 100× ideal). Attention is also taken above its grid's waves (the latency roof of
  model/pricing/roofline.py `busy_s`): the engines' tables measure short-context attention over
  many sequences at that cost (the H100's decode calls over ≤ 32 cached tokens and more than
  3,000 programs: a median 12.8× their ideal time, up to 650×; `calibrated` prices them at 0.83×
  measured), so such an op is recorded with those tables (`ratio_measured`), not as a finding.
  A GEMM is likewise taken above its input pass's serialized rows (model/pricing/input_pass.py:
  vLLM's per-tensor FP8 amax, one atomic per row, measured at every m up to 16,384): a narrow
  GEMM over millions of prompt tokens pays them at tens of times its ideal time; and above its
  engine's m = 1 path (model/pricing/single_row.py: vLLM's FP8 on the B300, 13.3 µs
  a one-row call more than a two-row one, measured on every shape), which also lets a step of
  one-row GEMMs cost more than the same step at twice the batch by that much, and no more
  (`physics_measured`, named with the engine's GEMM tables).

tests/model/test_scenario_space.py draws scenarios with hypothesis; benchmarks/scenario_space.py
draws a fixed random sample (validate/scenario_draws.py: the realistic space, or the property
test's whole one) and prints the counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.profiles import calibration_path, get_profile
from rooflens.model.analysis.quant_vs_bf16 import (
    MAX_DECODE_BATCH,
    MEASURED_FOLDERS,
    quant_slower_than_bf16,
)
from rooflens.model.predict.api import make_scenario, run
from rooflens.model.predict.steps import Prediction
from rooflens.model.pricing.custom_allreduce import collective_time_s
from rooflens.model.pricing.input_pass import serialized_rows_s
from rooflens.model.pricing.kinds import kind_key, kind_terms
from rooflens.model.pricing.roofline import busy_s, launch_floor_s, per_wave_s
from rooflens.model.pricing.single_row import single_row_paths, single_row_s
from rooflens.model.specs.dtypes import NARROW_WEIGHT_DTYPES
from rooflens.model.specs.params import count_params
from rooflens.model.specs.presets import get_model

MAX_CALIBRATED_OVER_IDEAL = 20.0
MIN_SHARE = 0.10
# A step may tie with a smaller one (whole tiles, whole waves), never fall.
REL_TOL = 1e-6
VISION_BYTES = 2.0  # bytes per vision-encoder parameter: it stays 16-bit (model/predict/memory.py)


@dataclass
class Report:
    """What one scenario broke: `crash` (an unexpected exception), `physics` (monotonicity,
    linearity, quantization) and `ratio` (an op far above its ideal time), each one line; and
    what measured tables explain (`quant_named`, `ratio_measured`, `physics_measured`)."""

    scenario: dict[str, Any]
    crash: list[str] = field(default_factory=list)
    physics: list[str] = field(default_factory=list)
    quant: list[str] = field(default_factory=list)
    quant_named: list[str] = field(default_factory=list)
    ratio: list[str] = field(default_factory=list)
    ratio_measured: list[str] = field(default_factory=list)
    physics_measured: list[str] = field(default_factory=list)
    refused: str = ""
    fits: bool = True


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(v) for v in value)
    return True


def predict(settings: dict[str, Any], **changes: Any) -> Prediction:
    fields = {**settings, **changes}
    opts = fields.pop("opts", ())
    return run(make_scenario(fields.pop("model"), fields.pop("gpu"), **fields), opts)


def _not_below(r: Report, what: str, small: float, big: float) -> None:
    if big < small * (1 - REL_TOL):
        r.physics.append(f"{what}: {big * 1e3:.4g} ms < {small * 1e3:.4g} ms")


@dataclass(frozen=True)
class Share:
    """One priced op of a step: seconds over its count, the fixed floor of those (launches and
    one wave; a collective's protocol latency), what measured kernels explain above it (an
    attention grid's further waves, a GEMM input pass's serialized rows), its share of the step
    and the profile key that priced it."""

    name: str
    seconds: float
    floor: float
    explained: float
    share: float
    key: str
    why: str = ""  # what the measured kernels do that `explained` prices


def _step_shares(pred: Prediction) -> Iterator[Share]:
    sc = pred.scenario
    profile = get_profile(sc.profile, sc.gpu, sc.engine)
    for phase in (pred.prefill, pred.decode):
        for p in phase.priced:
            seconds, explained, key = float(np.mean(p.total_s)), 0.0, kind_key(profile, p.op)
            why = ""
            if p.op.kind == "comm":  # a collective's fixed cost: its protocol's latency
                empty = replace(p.op, comm_bytes=0.0)
                floor = float(np.mean(collective_time_s(empty, sc.system, profile)))
            else:
                eff = kind_terms(profile, p.op)
                wave = per_wave_s(eff, sc.gpu)
                floor = float(np.mean(launch_floor_s(p.op, profile, sc.gpu))) + wave
                if key.startswith("attention"):
                    # the latency roof alone: the busy time of the same grid with no work
                    grid = busy_s(eff, 0.0, 0.0, p.op, sc.gpu.sm_count, wave_s=wave)
                    explained = max(float(np.mean(grid)) - wave, 0.0) * p.op.count
                    why = "its grid's waves"
                else:
                    rows = float(np.mean(serialized_rows_s(p.op, eff, sc.gpu))) * p.op.count
                    path = float(np.mean(single_row_s(p.op, eff, sc.gpu))) * p.op.count
                    explained = rows + path
                    why = "its m = 1 path" if path > rows else "its input pass's serialized rows"
            share = seconds / phase.time_s if phase.time_s > 0 else 0.0
            yield Share(f"{phase.phase}.{p.op.name}", seconds, floor * p.op.count, explained,
                        share, key, why)  # fmt: skip


def check(settings: dict[str, Any], quant_profiles: tuple[str, ...] = ("ideal",)) -> Report:
    """Every check of the module docstring on one scenario (`settings`: ScenarioRequest fields
    plus `opts`; the profile is set here). `quant_profiles`: where the quantized-decode check is
    a violation of physics (elsewhere it is recorded in `quant` only)."""
    r = Report(dict(settings))
    try:
        cal = predict(settings, profile="calibrated")
        ideal = predict(settings, profile="ideal")
        r.fits = cal.memory.fits
        if not _finite(cal.to_dict()) or not _finite(ideal.to_dict()):
            r.crash.append("non-finite number in the JSON")
        _monotone(r, settings, cal)
        _linear(r, settings, cal)
        _ratios(r, cal, ideal)
        if settings["batch"] <= MAX_DECODE_BATCH:
            for profile, pred in (("calibrated", cal), ("ideal", ideal)):
                _quantized(r, settings, profile, profile in quant_profiles, pred)
    except RooflensError as exc:
        r.refused = str(exc)
    except Exception as exc:  # a crash is what this check counts
        r.crash.append(f"{type(exc).__name__}: {exc}")
    return r


def _monotone(r: Report, s: dict[str, Any], base: Prediction) -> None:
    more_batch = predict(s, batch=2 * s["batch"], profile="calibrated")
    # a step of one-row GEMMs pays the engine's m = 1 path, measured slower than two rows
    # (model/pricing/single_row.py): at twice the batch it may step faster by that
    for what, small, big, phase in (
        ("TTFT at 2× batch", base.ttft_s, more_batch.ttft_s, base.prefill),
        ("TPOT at 2× batch", base.tpot_s, more_batch.tpot_s, base.decode),
    ):
        path = _one_row_s(base, phase.priced)
        if big < small * (1 - REL_TOL) and big >= (small - path) * (1 - REL_TOL):
            r.physics_measured.append(
                f"{what}: {big * 1e3:.4g} ms < {small * 1e3:.4g} ms: the m = 1 path of its "
                f"one-row GEMMs, as {gemm_tables(base)} measure m = 1 against m = 2"
            )
        else:
            _not_below(r, what, small, big)
    kv, kv2 = base.memory.kv_cache_bytes, more_batch.memory.kv_cache_bytes
    if not math.isclose(kv2, 2 * kv, rel_tol=1e-9):
        r.physics.append(f"KV cache at 2× batch: {kv2:.6g} B, not 2 × {kv:.6g} B")
    # A 1-token prompt is decode-shaped (one new token: the decode kernel's fitted terms,
    # model/pricing/roofline.py kind_terms); the law compares prefills from 2 tokens on.
    if s["prompt_len"] == 1:
        base = predict(s, prompt_len=2, profile="calibrated")
    more_prompt = predict(s, prompt_len=2 * max(2, s["prompt_len"]), profile="calibrated")
    _not_below(r, "TTFT at 2× prompt", base.ttft_s, more_prompt.ttft_s)
    _not_below(r, "TPOT at 2× prompt", base.tpot_s, more_prompt.tpot_s)


def _one_row_s(pred: Prediction, priced: list[Any]) -> float:
    """Seconds a step of `priced` pays for its one-row GEMMs' m = 1 path."""
    sc = pred.scenario
    paths = single_row_paths(
        [p.op for p in priced], get_profile(sc.profile, sc.gpu, sc.engine), sc.gpu
    )
    return sum(per_call * calls for per_call, calls in paths.values())


def _linear(r: Report, s: dict[str, Any], base: Prediction) -> None:
    """Weights per GPU ∝ 1/TP, where TP splits every projection (TP ≤ KV heads)."""
    tp = s.get("tp", 1)
    if tp == 1 or tp > get_model(s["model"]).n_kv_heads:
        return
    # the vision encoder stays whole on every GPU (model/predict/memory.py)
    vision = count_params(get_model(s["model"])).vision * VISION_BYTES
    one = predict(s, tp=1, ep=1, profile="calibrated").memory.weights_bytes - vision
    mine = (base.memory.weights_bytes - vision) * tp
    # embeddings, norms and the router are a few % of the weights and engines shard them too
    if not math.isclose(mine, one, rel_tol=0.02):
        r.physics.append(f"weights × TP at TP {tp}: {mine:.4g} B vs {one:.4g} B at TP 1")


def _quantized(r: Report, s: dict[str, Any], profile: str, strict: bool, pred: Any) -> None:
    """int4 and int8 weight-only, SmoothQuant and fp8 decode (per-tensor or block) cost no more
    than bf16 at batch ≤ MAX_DECODE_BATCH, unless the prediction names the measured table that
    says they do."""
    p = pred.scenario.precision
    if p.weight_dtype not in NARROW_WEIGHT_DTYPES:
        return
    slower = quant_slower_than_bf16(pred, s.get("opts", ()), profiles=(profile,))
    if slower is None:
        return
    line = (f"{profile}: {p.text} TPOT "
            f"{slower.tpot_s * 1e3:.4g} ms > bf16 {slower.bf16_tpot_s * 1e3:.4g} ms")  # fmt: skip
    if slower.named:
        r.quant_named.append(f"{line}: {', '.join(dict.fromkeys(t.table for t in slower.tables))}")
    else:
        (r.physics if strict else r.quant).append(f"{line}, no measured table named")


def _ratios(r: Report, cal: Prediction, ideal: Prediction) -> None:
    lower = {s.name: s.seconds for s in _step_shares(ideal)}
    for s in _step_shares(cal):
        base = lower.get(s.name, 0.0)
        limit = MAX_CALIBRATED_OVER_IDEAL * base
        if s.share <= MIN_SHARE or base <= 0 or s.seconds - s.floor <= limit:
            continue
        line = (f"{s.name}: {s.seconds / base:.0f}× ideal ({(s.seconds - s.floor) / base:.0f}× "
                f"above its launch floor), {s.share:.0%} of its step")  # fmt: skip
        if s.seconds - s.floor - s.explained > limit:
            r.ratio.append(line)
        else:
            tables = attention_tables(cal, s.key) if s.key.startswith("attention") else (
                gemm_tables(cal))  # fmt: skip
            r.ratio_measured.append(f"{line}: {s.why}, as {tables} measure such calls")


def gemm_tables(pred: Prediction) -> str:
    """The engine's GEMM tables that measure the input pass's serialized rows on this
    prediction's GPU."""
    return f"{_tables_folder(pred)}/gemm/{pred.scenario.engine}/*/gemm_perf.parquet"


def attention_tables(pred: Prediction, key: str) -> str:
    """The engines' attention tables the `calibrated` terms `key` of this prediction's GPU were
    fitted on."""
    phase = "generation" if key.startswith("attention_decode") else "context"
    return f"{_tables_folder(pred)}/attention/*/*/{phase}_attention_perf.parquet"


def _tables_folder(pred: Prediction) -> str:
    """The measured folder of the calibration file this prediction's GPU takes: its own, its
    same-SM sibling's, or every measured GPU's for the pooled file."""
    return MEASURED_FOLDERS.get(calibration_path(pred.scenario.gpu).stem, "aiconfigurator-*")
