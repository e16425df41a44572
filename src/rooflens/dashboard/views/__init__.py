"""One module per dashboard page, each with `render(ctx)`; `PAGES` is the sidebar's order.

Page ids are the `page=` query parameter of a shared link."""

from __future__ import annotations

from collections.abc import Callable

from rooflens.dashboard.controls import Context
from rooflens.dashboard.views import (
    compare,
    explore,
    memory,
    optimizations,
    planner,
    roofline,
    scaling,
    validation,
)

PAGES: dict[str, tuple[str, Callable[[Context], None]]] = {
    "explore": ("Explore", explore.render),
    "roofline": ("Roofline", roofline.render),
    "memory": ("Memory", memory.render),
    "optimizations": ("Optimizations", optimizations.render),
    "scaling": ("Scaling", scaling.render),
    "compare": ("GPUs side by side", compare.render),
    "planner": ("Capacity planner", planner.render),
    "validation": ("Validation", validation.render),
}
