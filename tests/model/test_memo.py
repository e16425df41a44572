"""model/memo.py: computes once per key, forgets the least recently used past its size, and
remembers no failure."""

from __future__ import annotations

import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.memo import Memo


def test_memo_computes_once_and_evicts_the_least_recently_used() -> None:
    memo: Memo[int] = Memo(2)
    calls: list[str] = []

    def square(key: str, x: int) -> int:
        return memo.get(key, lambda: calls.append(key) or x * x)

    assert square("a", 2) == 4 and square("b", 3) == 9 and square("a", 99) == 4
    assert calls == ["a", "b"]  # "a" came from the memo, not from 99
    square("c", 4)  # over size: "b" (least recently used) goes, "a" stays
    assert memo.keys() == ["a", "c"] and len(memo) == 2
    assert square("b", 5) == 25 and calls == ["a", "b", "c", "b"]


def test_memo_remembers_no_failure() -> None:
    memo: Memo[int] = Memo(4)

    def fail() -> int:
        raise RooflensError("no")

    with pytest.raises(RooflensError):
        memo.get("k", fail)
    assert memo.get("k", lambda: 7) == 7 and memo.keys() == ["k"]
