"""What would make a scenario fit in memory: the one advisor behind DESIGN.md's "says by how much
and what would make it fit", for the CLI and the dashboard alike (issue 14: there were two, and
they disagreed).

`fit_fixes` returns data: changes to the scenario, each checked to fit by the caller's own
`fits` (which applies the caller's optimizations), cheapest first:
1. a smaller batch, when one sequence fits (free);
2. an 8-bit KV cache (a small quality cost, no new hardware);
3. smaller weights, as the scheme engines run fastest on this GPU (model/specs/quant.py
   SCHEMES): W8A8-FP8 where it has fp8 tensor cores (Hopper, Ada, Blackwell, CDNA3), else W8A16
   (int8 weight-only), then W4A16 — never fp8 weights with 16-bit activations, which decode
   no faster than W8A8 and prefill slower;
4. more tensor parallelism (more GPUs: the dearest);
and, when no single change fits, the fewest GPUs with the largest weights dtype that fit
together. Front ends word a fix in their own vocabulary (flags, widget labels).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rooflens.hardware.errors import RooflensError
from rooflens.model.predict.scenario import Scenario
from rooflens.model.predict.steps import MemoryBreakdown
from rooflens.model.specs.quant import SCHEMES

FIT_TP = (2, 4, 8, 16)
SIXTEEN_BIT = ("fp32", "tf32", "bf16", "fp16")


@dataclass(frozen=True)
class Fix:
    """One change to the scenario (field -> value: tp, quant (a scheme id), kv_dtype, batch)."""

    changes: dict[str, object]
    at_most: bool = False  # "batch N or less"


@dataclass(frozen=True)
class FitAdvice:
    total_bytes: float
    capacity_bytes: float
    fixes: list[Fix] = field(default_factory=list)  # each fits on its own, cheapest first
    combined: bool = False  # no single change fits; fixes[0] changes several fields

    @property
    def over_bytes(self) -> float:
        return self.total_bytes - self.capacity_bytes


def weight_dtypes_to_try(sc: Scenario) -> list[str]:
    """Schemes with smaller weights than the current ones, cheapest for this GPU first:
    W8A8-FP8 where the GPU has fp8 tensor cores, then W8A16 and W4A16 (weight-only, any GPU)."""
    order = ["w8a8-fp8"] if "fp8" in sc.gpu.peak_flops_per_s else []
    order += ["w8a16", "w4a16"]
    bits = {"fp8": 8, "int8": 8, "int4": 4}
    current = bits.get(sc.precision.weight_dtype, 16)
    return [s for s in order if bits[SCHEMES[s].weight_dtype] < current]


def kv_dtype_to_try(sc: Scenario) -> str | None:
    if sc.precision.kv_dtype not in SIXTEEN_BIT:
        return None
    return "fp8" if "fp8" in sc.gpu.peak_flops_per_s else "int8"


def fit_fixes(sc: Scenario, mem: MemoryBreakdown, fits: Callable[[Scenario], bool]) -> FitAdvice:
    """The advice for a scenario that does not fit (see the module docstring)."""
    fixes: list[Fix] = []

    def works(**changes: object) -> bool:
        candidate = _with(sc, changes)
        try:
            return candidate is not None and fits(candidate)
        except RooflensError:  # a layout the model cannot take (experts over TP): not a fix
            return False

    def wider(t: int) -> dict[str, object]:
        """TP t, and EP scaled with it when experts are spread (EP is a multiple of TP)."""
        ep = sc.parallel.ep
        return {"tp": t, "ep": ep * t // sc.parallel.tp} if ep > 1 else {"tp": t}

    if 1 <= mem.max_batch < sc.workload.batch:
        fixes.append(Fix({"batch": mem.max_batch}, at_most=True))
    kv = kv_dtype_to_try(sc)
    if kv is not None and works(kv_dtype=kv):
        fixes.append(Fix({"kv_dtype": kv}))
    weights = weight_dtypes_to_try(sc)
    dtype = next((d for d in weights if works(quant=d)), None)
    if dtype is not None:
        fixes.append(Fix({"quant": dtype}))
    tp = next((t for t in FIT_TP if t > sc.parallel.tp and works(**wider(t))), None)
    if tp is not None:
        fixes.append(Fix(wider(tp)))
    if fixes:
        return FitAdvice(mem.total_bytes, mem.capacity_bytes, fixes)
    for t in (x for x in FIT_TP if x > sc.parallel.tp):
        for d in weights:
            if works(**wider(t), quant=d):
                return FitAdvice(
                    mem.total_bytes,
                    mem.capacity_bytes,
                    [Fix({**wider(t), "quant": d})],
                    True,
                )
    return FitAdvice(mem.total_bytes, mem.capacity_bytes)


FIELDS = {"tp": "parallel", "ep": "parallel", "quant": "precision", "kv_dtype": "precision",
          "batch": "workload"}  # fmt: skip


def _field_changes(name: str, value: object) -> dict[str, object]:
    """A fix's change as the fields of its part (a scheme sets the weights, activations and
    itself, and leaves the native format)."""
    if name != "quant":
        return {name: value}
    s = SCHEMES[str(value)]
    return {"weight_dtype": s.weight_dtype, "act_dtype": s.act_dtype, "expert_weight_dtype": "",
            "scheme": value, "native": False}  # fmt: skip


def _with(sc: Scenario, changes: dict[str, object]) -> Scenario | None:
    update: dict[str, object] = {}
    for name, value in changes.items():
        part = FIELDS[name]
        current = update.get(part, getattr(sc, part))
        changed = _field_changes(name, value)
        update[part] = current.model_copy(update=changed)  # type: ignore[attr-defined]
    try:
        return Scenario.model_validate({**sc.__dict__, **update})
    except (ValueError, RooflensError):
        return None
