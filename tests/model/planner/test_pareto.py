"""The Pareto frontier (model/planner/pareto.py) on hand-worked sets: dominated points go,
exact duplicates keep one copy, ties on one objective keep the better other one."""

from __future__ import annotations

import numpy as np

from rooflens.model.planner.pareto import pareto_mask


def test_a_worked_frontier() -> None:
    # (x, y): (4,1) (3,3) (2,2) (1,4) (3,1): (2,2) is under (3,3); (3,1) is under (3,3)
    x = np.array([4, 3, 2, 1, 3])
    y = np.array([1, 3, 2, 4, 1])
    assert pareto_mask(x, y).tolist() == [True, True, False, True, False]


def test_duplicates_keep_one_copy_and_ties_keep_the_better() -> None:
    assert pareto_mask(np.array([2, 2]), np.array([5, 5])).sum() == 1
    assert pareto_mask(np.array([2, 2]), np.array([5, 6])).tolist() == [False, True]
    assert pareto_mask(np.array([]), np.array([])).size == 0
