"""Leave-one-GPU-out cross-validation (`rooflens validate cv`): the accuracy to expect on a GPU
nobody has measured.

For each measured GPU G: fit the calibration on every other GPU's rows (validate/calibrate.py,
the fit `rooflens calibrate fit` runs), price G's rows from G's datasheet with the profile a GPU
without measurements gets (`rule='sibling'`, the rule `calibrated` prices with: the fit of the
measured GPU of G's SM design where the others include one, else the fit pooled over all other
GPUs, as generic.yaml; `'pooled'`: always the latter; `'generation'`: the nearest measured
architecture generation's fit, the pooled one for kinds it lacks, validate/generation.py), and
summarise |predicted / measured − 1| per
operator class with the validator's own statistics (validate/compare.py: rows faster than the
roofline left out). Attention is scored on the per-shape fastest implementation
(validate/frontier.py), which is what its terms describe, as in the accuracy budget.

A class measured only on G has nothing to learn from: its row says so (`trained_rows` = 0) and
its error is that of the terms it inherits (the GEMM's for fused MoE, `default` otherwise).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import Profile
from rooflens.model.specs.quant import FAMILIES
from rooflens.validate.compare import join, summarize
from rooflens.validate.datasets import own_runs
from rooflens.validate.fit_terms import (
    FAMILY_KINDS,
    FIT_EVALS,
    KIND_OPS,
    PLAIN_FAMILIES,
    attention_families,
    engine_of,
    kind_rows,
)
from rooflens.validate.frontier import best_of_impls
from rooflens.validate.generation import profile_for
from rooflens.validate.profile_fit import fit_profile
from rooflens.validate.store import provenance_base

# what a held-out GPU learns from under each rule (the CLI's help, the dashboard's caption)
RULE_TEXT = {
    "sibling": "the measured GPU of its SM design where there is one, else every other GPU "
    "pooled (what `calibrated` prices a GPU nobody measured with)",
    "pooled": "every other GPU pooled",
    "generation": "the measured GPUs of its nearest architecture generation",
}
RULES = tuple(RULE_TEXT)
CV_FILE = Path(__file__).parent / "results" / "cv.csv"  # the committed table (dashboard, README)
# each fold's profile, as `validate cv --folds` writes it (benchmarks/engine_steps.py --held-out)
CV_FOLDS_DIR = Path(__file__).parent / "results" / "cv_folds"
COLUMNS = ("held_out", "engine", "op", "rows", "trained_rows", "median", "p90", "bias", "rule",
           "reference_gpus", "trained_on", "git_commit", "date")  # fmt: skip
ALL_ENGINES = "all"  # cells over every implementation of the held-out GPU


def _trained_rows(train: pd.DataFrame, op: str) -> int:
    """Training rows of the kinds that price `op`: a precision subset (`gemm/fp8`) its kernel
    family's, the GEMM and MoE classes every family's, a config subset (`moe/tuned`) its op's."""
    base, _, subset = op.partition("/")
    if base in FAMILY_KINDS:
        if subset in (*PLAIN_FAMILIES, ""):
            return (
                int(train["op"].isin(KIND_OPS[base]).sum())
                if not subset
                else int(kind_rows(train, base).sum())
            )
        if subset in FAMILIES:
            return int(kind_rows(train, f"{base}:{subset}").sum())
        return int(train["op"].isin(KIND_OPS[base]).sum())
    kinds = [k for k, ops in KIND_OPS.items() if base in ops]
    if subset:  # an attention precision (`attention_decode/kv_fp8`): its family's rows
        return int(sum(kind_rows(train, f"{k}:{subset}").sum() for k in kinds))
    return int(sum(kind_rows(train, k, plain=False).sum() for k in kinds))


def cross_validate(
    table: pd.DataFrame,
    rule: str = "sibling",
    max_evals: int = FIT_EVALS,
    progress: Callable[[str], None] | None = None,
    calls: list[np.ndarray] | None = None,
    detail: list[pd.DataFrame] | None = None,
    train_own: bool = False,
    folds: dict[str, Profile] | None = None,
) -> pd.DataFrame:
    """One row per held-out GPU and operator class: rows scored, training rows of the class,
    median and p90 of |error|, median error (bias; negative = the model is too fast), the rule,
    the GPUs whose fit priced it (`reference_gpus`), the GPUs trained on, and provenance.
    `calls`, if given, receives each fold's per-call errors of the scored rows (`per_call`);
    `detail` each fold's scored calls with their op, precision (`quant`), engine and error
    (`targets`). Cells are over every implementation (`engine` = all) and per serving engine;
    GEMM and MoE also per precision (`gemm/fp8`, ...). This project's own runs are scored as one
    more implementation, trained on only with `train_own` (validate/datasets.py own_runs).
    `folds`, if given, receives the profile each held-out GPU was priced with, by its id
    (`rooflens validate cv --folds`: whole steps held out, benchmarks/engine_steps.py)."""
    if rule not in RULES:
        raise RooflensError(f"unknown rule '{rule}': use one of {', '.join(RULES)}")
    gpus = sorted(table["gpu"].astype(str).unique())
    if len(gpus) < 2:
        raise RooflensError(f"cross-validation needs >= 2 measured GPUs, got {gpus}")
    meta = provenance_base()
    frames = []
    for held_out in gpus:
        train = table[(table["gpu"] != held_out) & (train_own | ~own_runs(table))]
        if progress:
            progress(f"held out {held_out}: fitting on {', '.join(sorted(train['gpu'].unique()))}")
        pooled = fit_profile(train, None, max_evals=max_evals)
        profile, reference = profile_for(
            get_gpu(held_out), train, pooled, rule=rule, max_evals=max_evals
        )
        if folds is not None:
            folds[held_out] = profile
        scored, _ = best_of_impls(table[table["gpu"] == held_out])
        joined = join(scored, ("ideal", profile))
        joined["engine"] = engine_of(joined["impl"])
        summary = summarize(joined, ("gpu", "op"), subsets=True).assign(engine=ALL_ENGINES)
        engines = joined[joined["engine"].notna()]  # cells per engine its kernels ran
        if len(engines):
            per_engine = summarize(engines, ("gpu", "engine", "op"), subsets=True)
            summary = pd.concat([summary, per_engine], ignore_index=True)
        kept = joined[~joined["below_ideal"]]
        if calls is not None:  # the rows summarize scores, fused MoE left out
            calls.append(kept.loc[kept["op"].ne("moe"), f"error_{profile.name}"].to_numpy(float))
        if detail is not None:
            columns = ["gpu", "op", "quant", "engine", f"error_{profile.name}"]
            part = kept.reindex(columns=columns).rename(columns={columns[-1]: "error"})
            detail.append(part.assign(family=attention_families(kept)))
        frame = pd.DataFrame(
            {
                "held_out": held_out,
                "engine": summary["engine"],
                "op": summary["op"],
                "rows": summary["rows"],
                "trained_rows": [_trained_rows(train, str(op)) for op in summary["op"]],
                "median": summary["calibrated_median"],
                "p90": summary["calibrated_p90"],
                "bias": summary["calibrated_bias"],
                "rule": rule,
                "reference_gpus": ",".join(reference),
                "trained_on": ",".join(sorted(train["gpu"].astype(str).unique())),
                "git_commit": meta["git_commit"],
                "date": meta["date"],
            }
        )
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)[list(COLUMNS)]


# The targets per call on held-out GPUs (issue 23): bf16 GEMM and attention (16-bit
# MMAs over a 16-bit KV cache), and the 8- and 4-bit float GEMMs. (median, p90, worst GPU x op
# median) of |predicted / measured - 1|. FP8 attention and attention over an fp8 cache have no
# target of their own: reported beside them (None).
TARGETS: dict[str, tuple[float | None, float | None, float | None]] = {
    "bf16 GEMM + attention": (0.10, 0.30, 0.15),
    "fp8 / nvfp4 GEMM": (0.12, 0.35, None),
    "fp8 attention and fp8-KV attention": (None, None, None),
}
ATTENTION_OPS = ("attention_prefill", "attention_decode")


def targets(detail: list[pd.DataFrame]) -> pd.DataFrame:
    """Per target class: rows, median and p90 |error| over every fold's scored calls, the worst
    median of a held-out GPU x op cell, and the target itself."""
    calls = pd.concat(detail, ignore_index=True) if detail else pd.DataFrame()
    records = []
    for name, (median, p90, worst) in TARGETS.items():
        if calls.empty:
            continue
        gemm, attention = calls["op"].eq("gemm"), calls["op"].isin(ATTENTION_OPS)
        plain_attention = attention & calls["family"].isna()
        if name.startswith("bf16"):
            plain = calls["quant"].isna() | calls["quant"].isin(PLAIN_FAMILIES)
            rows = calls[(gemm & plain) | plain_attention]
        elif "GEMM" in name:
            rows = calls[gemm & calls["quant"].isin(("fp8", "fp8_block", "nvfp4"))]
        else:
            rows = calls[attention & ~plain_attention]
        if rows.empty:  # no call of the class was scored
            continue
        error = rows["error"].abs()
        cells = error.groupby([rows["gpu"], rows["op"]]).median()
        records.append({"class": name, "rows": len(rows),
                        "median": float(error.median()), "p90": float(error.quantile(0.9)),
                        "worst_cell_median": float(cells.max()) if len(cells) else float("nan"),
                        "target_median": median, "target_p90": p90,
                        "target_worst_cell": worst})  # fmt: skip
    return pd.DataFrame(records)


def per_call(calls: list[np.ndarray]) -> dict[str, float]:
    """Over every scored held-out call of every fold (fused MoE left out: no GPU but the A100
    measured it): rows, and the median and p90 of |error|."""
    error = np.abs(np.concatenate(calls)) if calls else np.zeros(0)
    if not len(error):
        return {"rows": 0.0, "median": float("nan"), "p90": float("nan")}
    return {"rows": float(len(error)), "median": float(np.median(error)),
            "p90": float(np.quantile(error, 0.9))}  # fmt: skip


def overall(cv: pd.DataFrame) -> dict[str, float]:
    """Over the GPU × class cells that had training data (subsets such as `moe/tuned` left
    out): the median and worst of the cells' medians and of their p90s."""
    learned = cv[(cv["trained_rows"] > 0) & ~cv["op"].str.contains("/")]
    if "engine" in cv.columns:
        learned = learned[learned["engine"] == ALL_ENGINES]
    return {
        "cells": float(len(learned)),
        "median_of_medians": float(learned["median"].median()),
        "worst_median": float(learned["median"].max()),
        "median_of_p90": float(learned["p90"].median()),
        "worst_p90": float(learned["p90"].max()),
    }
