"""Pareto frontier of two objectives to maximise (tokens/s per GPU against tokens/s per user),
vectorised: sort by the first descending, keep each point that beats the best second so far."""

from __future__ import annotations

import numpy as np


def pareto_mask(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """True where no other point is ≥ in both x and y and > in one (both maximised).

    Sorted by x descending (ties: y descending), a point is on the frontier iff its y beats
    every y before it; exact duplicates keep their first copy only.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    mask = np.zeros(x.size, dtype=bool)
    if x.size == 0:
        return mask
    order = np.lexsort((-y, -x))
    ys = y[order]
    best_before = np.concatenate([[-np.inf], np.maximum.accumulate(ys)[:-1]])
    mask[order] = ys > best_before
    return mask
