"""Pareto frontier of two objectives to maximise (tokens/s per GPU against tokens/s per user),
vectorised: sort by the first descending, keep each point that beats the best second so far;
and its thinning to the points that differ meaningfully (issue 26 §5: 32/40/48/56/64 GPUs
listed with the same p99s, each $32/h more for under 0.5 % more speed)."""

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


MIN_USER_GAIN = 0.02  # the least gain in tokens/s per user worth another frontier row


def thin_mask(x: np.ndarray, y: np.ndarray, min_gain: float = MIN_USER_GAIN) -> np.ndarray:
    """Of frontier points (x = tokens/s per GPU, y = tokens/s per user, both maximised), True
    where the point is kept: in order of falling x, the first, then each whose y beats the last
    kept y by at least `min_gain` (a share). On a frontier y rises as x falls, so a dropped point
    pays tokens/s per GPU (GPUs per token) for a gain per user under `min_gain`."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    keep = np.zeros(x.size, dtype=bool)
    last = -np.inf  # the first point is always kept
    for i in np.lexsort((-y, -x)):
        if last == -np.inf or y[i] >= last * (1.0 + min_gain):
            keep[i], last = True, y[i]
    return keep


def thinning_rule(hidden: int, min_gain: float = MIN_USER_GAIN) -> str:
    """The thinning said in words, with how many frontier points it hid."""
    return (
        f"Frontier thinned: a configuration is listed only when it is at least "
        f"{min_gain * 100:g} % faster per user (tokens/s per user) than the one listed before "
        f"it, in order of falling tokens/s per GPU; {hidden:,} frontier configuration"
        f"{'s' if hidden != 1 else ''} cost more GPUs per token for less and "
        f"{'are' if hidden != 1 else 'is'} left out."
    )
