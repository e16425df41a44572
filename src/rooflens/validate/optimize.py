"""A small derivative-free minimiser for the calibration fits (no SciPy dependency).

Nelder–Mead simplex search with the standard coefficients (reflection 1, expansion 2,
contraction ½, shrink ½; Nelder & Mead 1965, as analysed by Lagarias et al., SIAM J. Optim.
1998), restarted from the best point until a restart no longer improves it, which guards
against the simplex collapsing early on the flat, kinked objectives that |log error| makes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def nelder_mead(
    f: Callable[[np.ndarray], float],
    x0: np.ndarray,
    step: float = 0.5,
    max_evals: int = 2000,
    tol: float = 1e-7,
) -> tuple[np.ndarray, float]:
    """Minimise f from x0; returns (x, f(x)). Stops when the simplex's values agree within tol."""
    n = len(x0)
    simplex = [np.asarray(x0, dtype=float)]
    for i in range(n):
        vertex = simplex[0].copy()
        vertex[i] += step
        simplex.append(vertex)
    values = [f(x) for x in simplex]
    evals = n + 1
    while evals < max_evals:
        order = np.argsort(values)
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        if abs(values[-1] - values[0]) <= tol * (abs(values[0]) + tol):
            break
        centroid = np.mean(simplex[:-1], axis=0)
        worst = simplex[-1]
        reflected = centroid + (centroid - worst)
        fr = f(reflected)
        evals += 1
        if fr < values[0]:
            expanded = centroid + 2.0 * (centroid - worst)
            fe = f(expanded)
            evals += 1
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
            continue
        if fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
            continue
        toward = worst if fr >= values[-1] else reflected  # inside or outside contraction
        contracted = centroid + 0.5 * (toward - centroid)
        fc = f(contracted)
        evals += 1
        if fc < min(fr, values[-1]):
            simplex[-1], values[-1] = contracted, fc
            continue
        best = simplex[0]
        simplex = [best] + [best + 0.5 * (x - best) for x in simplex[1:]]
        values = [values[0]] + [f(x) for x in simplex[1:]]
        evals += n
    i = int(np.argmin(values))
    return simplex[i], float(values[i])


def minimise(
    f: Callable[[np.ndarray], float], x0: np.ndarray, restarts: int = 4, max_evals: int = 2000
) -> tuple[np.ndarray, float]:
    """Nelder–Mead restarted from its own best point (smaller steps each time)."""
    x, fx = nelder_mead(f, x0, max_evals=max_evals)
    step = 0.5
    for _ in range(restarts):
        step *= 0.5
        x_new, f_new = nelder_mead(f, x, step=step, max_evals=max_evals)
        if f_new >= fx - 1e-9:
            break
        x, fx = x_new, f_new
    return x, fx
