"""A GEMM engine's m = 1 path (model/pricing/single_row.py), measured, not searched: the term
`single_row_cycles` that validate/calibrate.py `fit_kind` holds fixed at what the rows say."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooflens.hardware.presets import get_gpu

# A GEMM engine's m = 1 path (model/pricing/single_row.py), measured, not searched: per shape
# (n, k) of a GPU and implementation measured at m = 1 and m = 2, whose weights and time a
# one-row input barely moves, the difference in SM cycles. Where nine shapes in ten run slower
# at m = 1 (SINGLE_ROW_QUANTILE above zero, over SINGLE_ROW_MIN_SHAPES or more), the median
# prices it. Of 41 GPU x engine GEMM cells one passes: vLLM 0.24's per-tensor FP8 on the B300,
# +13.3 µs a call (q10 10.9, q90 14.7 µs; 307 of its 35,742 rows, 5 of a fit's 600-row sample),
# whose batch-1 decode GEMMs the searched terms priced at 0.45-0.64x the tables. Every other
# cell's q10 is -0.1 to -25 µs (the RTX PRO 6000's vLLM FP8: median +1.2, q10 -1.7 µs).
SINGLE_ROW_TERM = "single_row_cycles"
SINGLE_ROW_QUANTILE = 0.1
SINGLE_ROW_MIN_SHAPES = 20


def single_row_cycles(rows: pd.DataFrame) -> float:
    """SINGLE_ROW_TERM of a GEMM kind's rows (any GPUs and implementations): the median m = 1
    minus m = 2 time per shape in SM cycles at each GPU's clock, where its SINGLE_ROW_QUANTILE
    is above zero; else 0."""
    keys = ["gpu", "impl", "n", "k"]
    pairs = rows[rows["m"].isin((1, 2))].pivot_table(
        index=keys, columns="m", values="measured_s", aggfunc="median"
    )
    if 1 not in pairs or 2 not in pairs:
        return 0.0
    diff = (pairs[1] - pairs[2]).dropna()
    if len(diff) < SINGLE_ROW_MIN_SHAPES:
        return 0.0
    gpus = diff.index.get_level_values("gpu")
    clock = np.array([get_gpu(str(g)).clock_hz() for g in gpus])
    cycles = diff.to_numpy(float) * clock
    if np.quantile(cycles, SINGLE_ROW_QUANTILE) <= 0:
        return 0.0
    return float(np.median(cycles))
