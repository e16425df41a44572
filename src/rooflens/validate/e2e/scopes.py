"""The decoder's operator scopes: each region of the forward is named after the prediction's
operator, so its time can be found. While profiling (`on`) a scope is a `torch.profiler`
`record_function`; with a `clock` dict it adds the calling thread's CPU time to clock[name]
(CPU runs, validate/e2e/measure.py); otherwise it costs nothing.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, nullcontext

from torch.profiler import record_function


class Scopes:
    """Scopes named after the prediction's operators: `record_function` while profiling (`on`),
    or, with a `clock` dict, the calling thread's CPU time per scope (CPU runs, measure.py)."""

    def __init__(self) -> None:
        self.on = False
        self.clock: dict[str, float] | None = None

    def __call__(self, name: str) -> AbstractContextManager[object]:
        if self.clock is not None:
            return _Clocked(self.clock, name)
        return record_function(name) if self.on else nullcontext()


class _Clocked:
    """Adds the thread CPU time spent inside the scope to totals[name]."""

    def __init__(self, totals: dict[str, float], name: str):
        self.totals, self.name, self.start = totals, name, 0.0

    def __enter__(self) -> None:
        self.start = time.thread_time()

    def __exit__(self, *exc: object) -> None:
        spent = time.thread_time() - self.start
        self.totals[self.name] = self.totals.get(self.name, 0.0) + spent
