"""Calibrated profiles from measurement tables (`rooflens calibrate fit`): the kinds, kernel
families and engines of hardware/profiles.py put together from the fits of one kind
(validate/calibrate.py `fit_kind`), and the profile files written with their provenance.

For one GPU (or pooled over GPUs: `generic.yaml`) a profile holds
- `kinds`: every kind and kernel family the rows measure (validate/fit_terms.py `fit_kinds`:
  `gemm`, `gemm:fp8`, `moe:int4_wo`, ..., the memory-bound kinds), each fitted on all its rows,
  every implementation weighted equally: what an engine not measured on that kind runs at;
- `engines`: per serving engine (vLLM, SGLang, TensorRT-LLM), the engine kinds (GEMM families,
  attention, MoE families) fitted on that engine's own kernels alone, each search started from
  the pooled terms; pooled over GPUs, a GEMM family's dropped where the engine's rows of it span
  fewer than `MIN_ENGINE_GPUS` and no other GPU measured the family, and decode attention's
  always (`POOLED_ONLY_KINDS`). `get_profile(..., engine)` lays them over `kinds`.
A measured GPU's file takes what it has rows for and the generic terms for the rest (an engine's
kind inherited from generic.yaml only where the GPU has no rows of that kind at all: its own
kernels, of any engine, say more about it than another GPU's).

This project's own kernels (`rooflens-*` runs: torch baselines and Triton kernels) price no
deployment: validate/datasets.py `training_table` leaves them out unless a results device is
named; they stay one more implementation that `validate compare` and `validate cv` score.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from rooflens.hardware.profiles import CALIBRATION_DIR, ENGINES, KindEfficiency, Profile
from rooflens.io.files import atomic_write_text
from rooflens.validate.calibrate import fit_kind
from rooflens.validate.fit_terms import (
    ENGINE_KINDS,
    FIT_EVALS,
    MAX_ROWS_PER_IMPL,
    base_kind,
    engine_of,
    fit_kinds,
    kind_rows,
)
from rooflens.validate.store import provenance_base
from rooflens.validate.stream_scale import stream_scales

COMM_PRIOR = {"comm_bandwidth_fraction": 0.8, "comm_latency_scale": 1.0}
# A per-engine search starts from the pooled terms of the same rows' GPU: fewer steps suffice.
ENGINE_EVALS_SHARE = 0.5
# A pooled profile (generic.yaml, a held-out fold) drops an engine's own terms for a GEMM family
# where that engine's rows of it span fewer than this many GPUs and the family's rows, every
# engine's, come from those same GPUs. Fitted on one GPU they describe that
# SM design's kernel (vLLM and SGLang run FlashInfer's CuTe-DSL NVFP4 GEMMs on the B300, its
# CUTLASS ones on the RTX PRO 6000; TensorRT-LLM's NVFP4 terms fitted on the B300 price the RTX
# PRO 6000's GEMMs +69 % slow, the family's terms pooled over the engines +23 %), and a GPU of
# that design takes them from its sibling's file (hardware/profiles.py calibration_file). A GEMM
# family's engines run the same shapes at one rate where compute binds (the B300's NVFP4: 4,238,
# 4,260 and 4,257 TFLOP/s median at m, n, k >= 4,096), so the family's pooled terms are a fair
# prior. A fused-MoE family's engines run kernels of different designs, and its pooled terms are
# pulled by the worst (vLLM's per-tensor FP8 MoE, the RTX PRO 6000 held out: +258 %): they keep
# their own terms from one GPU (held to the rule, that GPU's TensorRT-LLM FP8 MoE 12.0 -> 19.8 %).
# Where the family's rows span other GPUs too, its pooled terms mix other engines' kernels on
# other GPUs, and the engine's own from one GPU say more (the B300 held out: SGLang's DeepGEMM
# block-FP8 terms, fitted on the H100 alone, price its block-FP8 GEMMs at 16.6 / 31.5 % median /
# p90 |error|, where the family's terms, pooled with the RTX PRO 6000's, read 19.3 / 39.0 %).
MIN_ENGINE_GPUS = 2
SPAN_KINDS = ("gemm",)
# Nor does a pooled profile keep an engine's own decode-attention terms: an engine picks its
# decode kernel per SM design (SGLang runs TensorRT-LLM's MHA kernel on the B300, FA3 on the
# H100, FlashAttention on the A100, FlashInfer on the RTX PRO 6000), so its terms pooled over
# GPUs describe kernels another GPU does not run; the frontier's pooled terms (the best kernel
# per shape) price it closer held out. Prefill attention keeps them (TensorRT-LLM's one
# prefill design runs slower than the frontier on every GPU). A GPU's own file, and its
# siblings through it, keep every engine's decode terms. The held-out figures that decided it:
# docs/validation.md, "An engine's decode attention stays on its SM design".
POOLED_ONLY_KINDS = ("attention_decode",)
METHOD = (
    "mean |log(pred/measured)|, each impl (attention: impl and decade of bytes) weighted "
    f"equally, at most {MAX_ROWS_PER_IMPL} rows per GPU and impl (fixed-seed sample), "
    "Nelder-Mead (validate/calibrate.py); attention kinds on the frontier: per shape key "
    "measured by >= 2 impls, the fastest impl's time (validate/frontier.py), so the terms "
    "describe the best available kernel; moe on the shapes vLLM ships a tuned config for "
    "(validate/moe_tuned_configs.yaml) where labelled; kernel families (`gemm:fp8`, ...) and "
    "engines (`engines`) fitted apart (validate/profile_fit.py)"
)


def fit_profile(
    table: pd.DataFrame,
    gpu_id: str | None,
    inherit: Profile | None = None,
    max_evals: int = FIT_EVALS,
) -> Profile:
    """A calibrated profile for one GPU (gpu_id) or pooled over all of `table` (None: generic)."""
    rows = table if gpu_id is None else table[table["gpu"] == gpu_id]
    scales = stream_scales(rows) if gpu_id is None else {}  # each GPU's memory system, pooled
    kinds: dict[str, KindEfficiency] = {}
    fits: dict[str, Any] = {}
    for kind in fit_kinds(rows):
        pooled = inherit.kinds.get(kind) if inherit is not None else None
        eff, stats = fit_kind(rows, kind, max_evals, pooled, scales=scales)
        if stats["rows"]:
            kinds[kind], fits[kind] = eff, stats
    engines: dict[str, dict[str, KindEfficiency]] = {}
    engine_fits: dict[str, Any] = {}
    engine = engine_of(rows["impl"]) if len(rows) else pd.Series(dtype=object)
    for name in ENGINES:
        own = rows[engine.eq(name)]
        for kind in fit_kinds(own):
            if base_kind(kind) not in ENGINE_KINDS or kind not in kinds:
                continue
            if gpu_id is None and base_kind(kind) in POOLED_ONLY_KINDS:
                continue  # kernels chosen per SM design: the frontier's pooled terms price it
            if gpu_id is None and base_kind(kind) in SPAN_KINDS:
                spans = set(own.loc[kind_rows(own, kind), "gpu"])
                family = set(rows.loc[kind_rows(rows, kind), "gpu"])
                if len(spans) < MIN_ENGINE_GPUS and family == spans:
                    continue  # one GPU's kernel: its terms are that SM design's, not any GPU's
            evals = max(100, int(max_evals * ENGINE_EVALS_SHARE))
            eff, stats = fit_kind(own, kind, evals, kinds[kind], one_engine=True, scales=scales)
            if not stats["rows"]:
                continue
            engines.setdefault(name, {})[kind] = eff
            engine_fits.setdefault(name, {})[kind] = stats
    if inherit is not None:
        for kind, eff in inherit.kinds.items():
            if kind not in kinds and kind != "default":
                kinds[kind], fits[kind] = eff, {"inherited": "generic.yaml"}
        for name, inherited in inherit.engines.items():
            for kind, eff in inherited.items():
                if not kind_rows(rows, kind).any():
                    engines.setdefault(name, {}).setdefault(kind, eff)
    kinds["default"] = kinds.get("elementwise") or KindEfficiency(
        memory_fraction=0.8, overhead_s=3e-6
    )
    gpus = sorted(rows["gpu"].unique().tolist())
    what = f"GPU {gpu_id}" if gpu_id else f"pooled over {', '.join(gpus)}"
    return Profile(
        name="calibrated",
        gpu_id=gpu_id,
        kinds=kinds,
        engines={name: dict(sorted(k.items())) for name, k in sorted(engines.items())},
        **COMM_PRIOR,
        source=f"rooflens calibrate fit ({what}), {dt.date.today().isoformat()}",
        provenance={
            **provenance_base(),
            "method": METHOD,
            "gpus": gpus,
            **({"stream_scale": scales} if scales else {}),
            "fit": fits,
            "engine_fit": {name: _brief(f) for name, f in sorted(engine_fits.items())},
            "comm": "prior (0.8 of link bandwidth, 1 link latency per step); NCCL protocol fit "
            "is model/pricing/comm.py's hardware/calibration/comm-a100.yaml",
        },
    )


def _brief(fits: dict[str, Any]) -> dict[str, Any]:
    """An engine fit's record: rows and errors (the row counts by implementation are long)."""
    keys = ("rows", "excluded_faster_than_peak", "median_abs_error", "p90_abs_error")
    return {kind: {k: f[k] for k in keys if k in f} for kind, f in sorted(fits.items())}


def write_profile(profile: Profile, path: Path, by: str = "rooflens calibrate fit") -> Path:
    """Write a fitted profile as a calibration file, its header naming the command (`by`)."""
    data = profile.model_dump(mode="json", exclude_defaults=False)
    data.pop("engine", None)  # a file holds every engine; `get_profile` resolves one
    data["kinds"] = {
        k: {t: v for t, v in e.items() if v is not None} for k, e in data["kinds"].items()
    }
    data["engines"] = {
        name: {k: {t: v for t, v in e.items() if v is not None} for k, e in kinds.items()}
        for name, kinds in data["engines"].items()
    }
    header = (
        f"# Written by `{by}` (validate/profile_fit.py); do not edit by hand.\n"
        "# Terms: hardware/profiles.py (formula: model/pricing/roofline.py). Method and data:\n"
        "# docs/validation.md, `provenance` below.\n"
    )
    return atomic_write_text(path, header + yaml.safe_dump(data, sort_keys=False, width=100))


def fit_all(
    table: pd.DataFrame, out_dir: Path = CALIBRATION_DIR, max_evals: int = FIT_EVALS
) -> dict[str, Path]:
    """Generic (pooled) profile plus one per measured GPU; returns the files written."""
    generic = fit_profile(table, None, max_evals=max_evals)
    written = {"generic": write_profile(generic, out_dir / "generic.yaml")}
    for gpu_id in sorted(table["gpu"].unique()):
        own = fit_profile(table, str(gpu_id), inherit=generic, max_evals=max_evals)
        written[str(gpu_id)] = write_profile(own, out_dir / f"{gpu_id}.yaml")
    return written
