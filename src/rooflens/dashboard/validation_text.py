"""What the Validation page says before its numbers (issue 26 §6): what a measurement and a table
row are, the held-out accuracy first (from the committed leave-one-GPU-out table), that the
±20 % tiles are scored on the data the calibrated profile was fitted on, and which whole-model
runs are CPU runs. Pure functions of the frames they are given."""

from __future__ import annotations

import pandas as pd

CPU_DEVICE = "cpu"  # validate/results/e2e/cpu: `rooflens validate e2e --device cpu`


def held_out_text(cv: pd.DataFrame | None) -> str:
    """The leave-one-GPU-out accuracy in one sentence: the row-weighted median |error| over
    every held-out GPU and operator class, and the worst class; '' without a table."""
    needed = {"held_out", "op", "rows", "median"}
    if cv is None or cv.empty or not needed <= set(cv.columns):
        return ""
    classes = cv[~cv["op"].astype(str).str.contains("/")]  # moe/tuned, moe/untuned: parts of moe
    rows = classes["rows"].astype(float)
    if rows.sum() <= 0:
        return ""
    weighted = float((classes["median"] * rows).sum() / rows.sum())
    worst = classes.iloc[int(classes["median"].to_numpy().argmax())]
    return (
        f"Held out first: with each measured GPU left out of the fit in turn and predicted from "
        f"its datasheet, the calibrated profile's median |error| is {weighted * 100:.0f} % over "
        f"{int(rows.sum()):,} kernel calls (row-weighted over {classes['held_out'].nunique()} "
        f"GPUs and their operator classes); the worst class is {worst['op']} on "
        f"{worst['held_out']}, {worst['median'] * 100:.0f} % (section “held-out GPU”)."
    )


def lead_text(cv: pd.DataFrame | None) -> str:
    """The page's opening paragraph."""
    rows = (
        "A measurement is one kernel call (an operator at one shape and dtype) timed on a real "
        "GPU, beside the time rooflens predicts for it; a row of the tables below sums up one "
        "GPU and operator class. Error = predicted / measured − 1."
    )
    return " ".join(t for t in (rows, held_out_text(cv)) if t)


IN_SAMPLE_TEXT = (
    "The ±20 % tiles score each profile on these same measurements. The calibrated profile was "
    "fitted on them, so its share is in-sample: kinder than the held-out accuracy above, which "
    "is what to expect on a GPU nobody has measured."
)


def e2e_run_label(model: str, device: str, run: str) -> str:
    """'tiny-llama · CPU run · 2026-…-e2e': a run's device said, a CPU run as a CPU run."""
    where = "CPU run" if device == CPU_DEVICE else f"{device} run"
    return f"{model} · {where} · {run}"
