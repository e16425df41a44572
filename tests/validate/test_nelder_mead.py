"""The calibration minimiser finds known minima."""

from __future__ import annotations

import numpy as np

from rooflens.validate.optimize import minimise, nelder_mead


def test_quadratic_bowl():
    target = np.array([1.5, -2.0, 0.25])
    x, fx = nelder_mead(lambda v: float(np.sum((v - target) ** 2)), np.zeros(3), max_evals=3000)
    np.testing.assert_allclose(x, target, atol=1e-3)
    assert fx < 1e-6


def test_rosenbrock_with_restarts():
    def rosen(v: np.ndarray) -> float:
        return float(100 * (v[1] - v[0] ** 2) ** 2 + (1 - v[0]) ** 2)

    x, fx = minimise(rosen, np.array([-1.2, 1.0]), max_evals=4000)
    np.testing.assert_allclose(x, [1.0, 1.0], atol=1e-3)
    assert fx < 1e-6


def test_kinked_objective_of_absolute_errors():
    # Median-like objective: minimum at the median of the points (2.0).
    points = np.array([0.0, 1.0, 2.0, 10.0, 11.0])
    x, _ = minimise(lambda v: float(np.sum(np.abs(points - v[0]))), np.array([7.0]))
    assert abs(x[0] - 2.0) < 1e-3
