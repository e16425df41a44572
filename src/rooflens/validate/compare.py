"""Measured vs predicted: join a measurement table with the cost model's predictions under the
`ideal` and `calibrated` profiles, and summarise the error by GPU and operator class.

Error of a row = predicted / measured − 1 (negative: the model is too fast). Statistics are the
median and 90th percentile of |error|. Rows measured faster than the ideal roofline are left
out of the statistics and counted: the README of the measurements calls them cache effects.
Whether such a row really is one is checked, not assumed: even with the whole L2 holding part
of the working set, a kernel needs at least max(FLOPs / peak, (bytes − L2) / bandwidth)
(`cache_bound_s`). Rows faster than that bound cannot be explained by caching; they count as
rows the ideal profile under-predicts, and that share must be ~0 for `ideal` to be the lower
bound DESIGN.md promises. Fused-MoE rows also report their tuned and untuned kernel-config
subsets apart (`summarize(..., subsets=True)`): the calibrated `moe` terms describe the tuned one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import Profile, get_profile
from rooflens.hardware.spec import GPUSpec
from rooflens.model.pricing.kernel_columns import ATTENTION_OPS
from rooflens.model.pricing.kernel_table import predict_frame
from rooflens.validate.fit_terms import attention_families, engine_of, kind_rows
from rooflens.validate.frontier import BEST_IMPL, best_of_impls
from rooflens.validate.moe_configs import SUBSET_COLUMN

PROFILE_NAMES = ("ideal", "calibrated")


def join(measured: pd.DataFrame, profiles: Sequence[str | Profile] = PROFILE_NAMES) -> pd.DataFrame:
    """`measured` plus flops, bytes, bound (ideal), predicted_<profile>_s, error_<profile>, and
    the flags below_ideal (faster than the roofline), cache_effect and ideal_under (rows in
    `measured`'s order, index reset)."""
    measured = measured.reset_index(drop=True)
    parts = []
    for gpu_id, rows in measured.groupby("gpu", sort=True):
        gpu = get_gpu(str(gpu_id))
        out = predict_frame(rows, gpu, "ideal", detail=True)
        out = out.rename(columns={"predicted_s": "ideal_s"})
        for profile in profiles:
            label = profile if isinstance(profile, str) else profile.name
            if label == "ideal":
                out["predicted_ideal_s"] = out["ideal_s"]
                continue
            out[f"predicted_{label}_s"] = _engine_priced(rows, gpu, profile)
        dtypes = out["compute_dtype"]  # each distinct dtype's peak once, not once a row
        peak = dtypes.map({d: gpu.peak(d) for d in dtypes.unique()}).to_numpy(dtype=float)
        streamed = np.maximum(out["bytes"] - gpu.l2_bytes, 0.0) / gpu.hbm_bytes_per_s
        out["cache_bound_s"] = np.maximum(out["flops"] / peak, streamed)
        parts.append(out)
    joined = pd.concat(parts).loc[measured.index]
    below = joined["ideal_s"] > joined["measured_s"]
    joined["below_ideal"] = below
    joined["cache_effect"] = below & (joined["measured_s"] >= joined["cache_bound_s"])
    joined["ideal_under"] = below & ~joined["cache_effect"]
    for profile in profiles:
        label = profile if isinstance(profile, str) else profile.name
        joined[f"error_{label}"] = joined[f"predicted_{label}_s"] / joined["measured_s"] - 1.0
    return joined.drop(columns=["ideal_s"])


def _engine_priced(rows: pd.DataFrame, gpu: GPUSpec, profile: str | Profile) -> np.ndarray:
    """Each row priced as the engine that ran it would be (its view of the profile,
    hardware/profiles.py `for_engine`); rows no engine ran (Vidur, this project's kernels), and
    every row of a profile without `engines`, with the terms pooled over engines."""
    out = np.empty(len(rows))
    engines = engine_of(rows["impl"]) if "impl" in rows.columns else pd.Series(None, rows.index)
    engines = engines.fillna("")
    for engine, idx in engines.groupby(engines).groups.items():
        name = str(engine) or None
        if not isinstance(profile, Profile):
            view = get_profile(profile, gpu, name)
        else:
            view = profile.for_engine(name) if name and profile.engines else profile
        out[rows.index.get_indexer(idx)] = predict_frame(rows.loc[idx], gpu, view)["predicted_s"]
    return out


def summarize(
    joined: pd.DataFrame,
    by: Sequence[str] = ("gpu", "op"),
    profiles: Sequence[str] = PROFILE_NAMES,
    subsets: bool = False,
) -> pd.DataFrame:
    """Per group: rows, rows left out (faster than the roofline; cache effects), the ideal
    profile's under-predicted share, and median / p90 |error| of each profile. With `subsets`
    (and `op` in `by`), rows labelled with a kernel-config subset (`moe_config`: tuned or
    untuned, validate/moe_configs.py) are also summarised apart as op `moe/tuned`, …, after
    their op's row over all of them, and so are precisions: GEMM and MoE kernel families
    (`gemm/fp8`) and attention's (`attention_prefill/bf16`, `attention_prefill/fp8`,
    `attention_decode/kv_fp8`)."""
    out = _summary(joined, by, profiles)
    if not (subsets and "op" in by):
        return out
    parts = [out]
    for column in (SUBSET_COLUMN, "quant"):
        if column not in joined.columns:
            continue
        labelled = joined[joined[column].notna()]
        if column == "quant":  # precision subsets of the fused MoE and GEMM classes
            labelled = labelled[labelled["op"].isin(("gemm", "moe"))]
        if not labelled.empty:
            labelled = labelled.assign(op=labelled["op"] + "/" + labelled[column].astype(str))
            parts.append(_summary(labelled, by, profiles))
    # attention per precision: its families (fp8 attention, attention over an fp8 cache) and
    # the 16-bit rows under their dtype (`attention_prefill/bf16`), as the targets split them
    attention = joined["op"].isin(ATTENTION_OPS) & joined["dtype"].notna()
    if attention.any():
        labels = attention_families(joined).fillna(joined["dtype"].astype(str))[attention]
        labelled = joined[attention].assign(op=joined.loc[attention, "op"] + "/" + labels)
        parts.append(_summary(labelled, by, profiles))
    out = pd.concat(parts, ignore_index=True)
    return out.sort_values(list(by), kind="stable").reset_index(drop=True)


def _summary(joined: pd.DataFrame, by: Sequence[str], profiles: Sequence[str]) -> pd.DataFrame:
    records = []
    for keys, g in joined.groupby(list(by), sort=True):
        kept = g[~g["below_ideal"]]
        rec: dict[str, object] = dict(zip(by, keys if isinstance(keys, tuple) else (keys,),
                                          strict=True))  # fmt: skip
        rec["rows"] = len(g)
        rec["excluded_cache"] = int(g["cache_effect"].sum())
        rec["ideal_under_share"] = float(g["ideal_under"].mean())
        for label in profiles:
            err = kept[f"error_{label}"].abs()
            rec[f"{label}_median"] = float(err.median()) if len(err) else float("nan")
            rec[f"{label}_p90"] = float(err.quantile(0.9)) if len(err) else float("nan")
        if "calibrated" in profiles and len(kept):
            rec["calibrated_bias"] = float(kept["error_calibrated"].median())
        records.append(rec)
    return pd.DataFrame(records)


def band_check(
    joined: pd.DataFrame,
    profile: str = "ideal",
    median_band: tuple[float, float] = (0.5, 5.0),
    floor: float = 0.3,
) -> tuple[bool, dict[str, float]]:
    """Whether measured / predicted sits in a band a noisy shared machine still meets: the
    median ratio within `median_band` and no row faster than `floor` x the prediction (a
    faster row means a wrong spec or a wrong FLOP/byte count, not noise)."""
    ratio = joined["measured_s"] / joined[f"predicted_{profile}_s"]
    stats = {"median_ratio": float(ratio.median()), "min_ratio": float(ratio.min()),
             "max_ratio": float(ratio.max()), "rows": float(len(ratio))}  # fmt: skip
    low, high = median_band
    ok = bool(low <= stats["median_ratio"] <= high and stats["min_ratio"] >= floor)
    return ok, stats


def prefill_by_head_dim(
    table: pd.DataFrame, min_tokens: int = 4096, min_heads: int = 1
) -> pd.DataFrame:
    """Long 16-bit prefill attention per GPU and head_dim (no window, at least `min_tokens`
    tokens and `min_heads` query heads), over the per-shape fastest implementation: rows, the
    median fraction of the bf16 tensor peak the kernel reaches (causal FLOPs / time / datasheet
    peak), and the median error of the GPU's calibrated terms pooled over engines (what the
    frontier was fitted with). The softmax term's evidence (model/pricing/softmax.py;
    benchmarks/attention_head_dim.py prints it)."""
    rows = table[kind_rows(table, "attention") & table["window"].fillna(0).eq(0)
                 & (table["seq_len"] >= min_tokens) & (table["n_heads"] >= min_heads)]  # fmt: skip
    out = []
    for gpu_id, own in rows.groupby("gpu"):
        best, _ = best_of_impls(own)
        best = best[best["impl"] == BEST_IMPL]
        if best.empty:
            continue
        gpu = get_gpu(str(gpu_id))
        pooled = get_profile("calibrated", gpu, engine=None)
        joined = join(best, ("ideal", pooled.model_copy(update={"engines": {}})))
        joined["fraction"] = joined["flops"] / joined["measured_s"] / gpu.peak("bf16")
        for _, g in joined.groupby("head_dim"):
            out.append({"gpu": str(gpu_id), "head_dim": int(g["head_dim"].iloc[0]), "rows": len(g),
                        "peak_fraction": float(g["fraction"].median()),
                        "calibrated_error": float(g["error_calibrated"].median())})  # fmt: skip
    return pd.DataFrame(out)
