"""A bounded, thread-safe memo for results that are costly and reused across what-ifs.

The dashboard serves sessions from several threads, and its what-ifs recompute the same pieces
under a changed setting that does not touch them (throughput at the memory limit when only the
batch moves; a planner group's cost curves when only the arrival rate or the SLOs move). A `Memo`
keeps the last `size` values by key, least recently used out first. The value is computed
outside the lock, so two threads asking at once may both compute it (the same value).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    def __init__(self, size: int) -> None:
        self.size = size
        self._values: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The value under `key`, computed by `compute()` the first time (an exception it
        raises is not remembered)."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = compute()
        with self._lock:
            self._values[key] = value
            while len(self._values) > self.size:
                self._values.popitem(last=False)
        return value

    def keys(self) -> list[Hashable]:
        """The keys held, least recently used first."""
        with self._lock:
            return list(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
