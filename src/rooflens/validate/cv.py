"""Leave-one-GPU-out cross-validation (`rooflens validate cv`): the accuracy to expect on a GPU
nobody has measured.

For each measured GPU G: fit the calibration on every other GPU's rows (validate/calibrate.py,
the fit `rooflens calibrate fit` runs), price G's rows from G's datasheet with the profile a GPU
without measurements gets (`rule='pooled'`: the fit pooled over all other GPUs, as
generic.yaml; `'generation'`: the nearest measured architecture generation's fit, the pooled
one for kinds it lacks, validate/generation.py), and summarise |predicted / measured − 1| per
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
from rooflens.validate.calibrate import fit_profile
from rooflens.validate.compare import join, summarize
from rooflens.validate.fit_terms import KIND_OPS, kind_rows
from rooflens.validate.frontier import best_of_impls
from rooflens.validate.generation import profile_for
from rooflens.validate.store import provenance_base

RULES = ("pooled", "generation")
CV_FILE = Path(__file__).parent / "results" / "cv.csv"  # the committed table (dashboard, README)
COLUMNS = ("held_out", "op", "rows", "trained_rows", "median", "p90", "bias", "rule",
           "reference_gpus", "trained_on", "git_commit", "date")  # fmt: skip


def _trained_rows(train: pd.DataFrame, op: str) -> int:
    """Training rows of the kinds that price `op` (fused-MoE subsets count as `moe`)."""
    base = op.split("/")[0]
    kinds = [k for k, ops in KIND_OPS.items() if base in ops]
    return int(sum(kind_rows(train, k).sum() for k in kinds))


def cross_validate(
    table: pd.DataFrame,
    rule: str = "pooled",
    max_evals: int = 1500,
    progress: Callable[[str], None] | None = None,
    calls: list[np.ndarray] | None = None,
) -> pd.DataFrame:
    """One row per held-out GPU and operator class: rows scored, training rows of the class,
    median and p90 of |error|, median error (bias; negative = the model is too fast), the rule,
    the GPUs whose fit priced it (`reference_gpus`), the GPUs trained on, and provenance.
    `calls`, if given, receives each fold's per-call errors of the scored rows (`per_call`)."""
    if rule not in RULES:
        raise RooflensError(f"unknown rule '{rule}': use one of {', '.join(RULES)}")
    gpus = sorted(table["gpu"].astype(str).unique())
    if len(gpus) < 2:
        raise RooflensError(f"cross-validation needs >= 2 measured GPUs, got {gpus}")
    meta = provenance_base()
    frames = []
    for held_out in gpus:
        train = table[table["gpu"] != held_out]
        if progress:
            progress(f"held out {held_out}: fitting on {', '.join(sorted(train['gpu'].unique()))}")
        pooled = fit_profile(train, None, max_evals=max_evals)
        profile, reference = profile_for(
            get_gpu(held_out), train, pooled, rule=rule, max_evals=max_evals
        )
        scored, _ = best_of_impls(table[table["gpu"] == held_out])
        joined = join(scored, ("ideal", profile))
        summary = summarize(joined, ("gpu", "op"), subsets=True)
        if calls is not None:  # the rows summarize scores, fused MoE left out (no training rows)
            kept = joined[~joined["below_ideal"] & joined["op"].ne("moe")]
            calls.append(kept[f"error_{profile.name}"].to_numpy(float))
        frame = pd.DataFrame(
            {
                "held_out": held_out,
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
    return {
        "cells": float(len(learned)),
        "median_of_medians": float(learned["median"].median()),
        "worst_median": float(learned["median"].max()),
        "median_of_p90": float(learned["p90"].median()),
        "worst_p90": float(learned["p90"].max()),
    }
