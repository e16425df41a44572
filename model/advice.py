"""What would make a scenario fit in memory: the one-line advice DESIGN.md asks for."""

from __future__ import annotations

from collections.abc import Callable

from hardware.errors import RooflensError
from model.scenario import Scenario
from model.steps import MemoryBreakdown
from model.units import fmt_bytes


def fit_advice(
    sc: Scenario, mem: MemoryBreakdown, fits_with: Callable[[Scenario], bool] | None = None
) -> str:
    """'needs X, Y over capacity Z: try …' naming changes that were checked to fit."""
    over = mem.total_bytes - mem.capacity_bytes
    head = (
        f"{sc.model.id} needs {fmt_bytes(mem.total_bytes)} per GPU on {sc.gpu.id} "
        f"(capacity {fmt_bytes(mem.capacity_bytes)}, {fmt_bytes(over)} over)"
    )
    tries: list[str] = []
    if fits_with is not None:
        for tp in (2, 4, 8, 16):
            if tp <= sc.parallel.tp:
                continue
            candidate = _with(sc, parallel=sc.parallel.model_copy(update={"tp": tp}))
            if candidate is not None and fits_with(candidate):
                tries.append(f"--tp {tp}")
                break
        for dtype in ("int8", "int4"):
            if sc.precision.weight_dtype in (dtype, "int4"):
                continue
            candidate = _with(sc, precision=sc.precision.model_copy(update={"weight_dtype": dtype}))
            if candidate is not None and fits_with(candidate):
                tries.append(f"--weight-dtype {dtype}")
                break
    if mem.max_batch >= 1 and mem.max_batch < sc.workload.batch:
        tries.append(f"--batch {mem.max_batch} or less")
    elif mem.weights_bytes + mem.overhead_bytes < mem.capacity_bytes:
        tries.append("a shorter context or an fp8/int8 KV cache (--kv-dtype)")
    return head + ("; try " + ", or ".join(tries) if tries else "; no single change fits")


def _with(sc: Scenario, **update: object) -> Scenario | None:
    try:
        return Scenario.model_validate({**sc.__dict__, **update})
    except (ValueError, RooflensError):
        return None
