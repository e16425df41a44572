"""The contract every optimization keeps: a pure transform applied from outside the cost model.

An optimization overrides only the hooks it needs; every default is the identity, so a neutral
setting changes nothing. Hooks run in `order` (lower first) at these pipeline stages:

- `scenario(sc)`: change the spec (GQA, pruning, distillation), precision or workload;
- `ops(ops, sc, step)`: change one step's operator table (quantization, FlashAttention off, TP);
- `kv_tokens_per_sequence(tokens, sc)`: KV positions a sequence holds in memory (paging, windows);
- `memory(mem, sc)`: other memory changes (a draft model's weights);
- `result(pred, sc, pipeline)`: change the step structure (speculative decoding, early exit),
  with `pipeline` able to price any extra step;
- `prompt_tokens(tokens)` and `timing(t, sc, pipeline)`: the same changes on numpy arrays
  (model/optimizations/_timing.py), for callers that price grids (the capacity planner). A
  `result` hook that changes TTFT, TPOT or end-to-end time must come with `timing` and be
  written in terms of it (tests/model/optimizations/test_timing_hooks.py checks both).

Each subclass sets `name`, `summary`, `citation` and declares its parameters in `params`.

Ordering convention for `order` (one value per optimization, used for every hook):
- 0–9: table rebuilds (no-kv-cache re-emits the table, so every other transform must follow);
- 10–29: scenario/spec transforms (gqa, mqa, quant's precision, sliding-window, pruning);
- 30–69: table transforms (eager-attention, flash-decoding, sparsity, fusion);
- 70–79: KV-cache layout (paged-kv, contiguous-kv);
- 80–84: step structure (`result`/`timing`: speculative, Medusa, lookahead rebuild the decode
  iteration from priced steps);
- 85–89: costs charged on the final iteration, whatever built it: offload at 85 (the weight
  copy of the final step), eager-launch at 87 (the host launches of every kernel it issues);
- 90–99: what reads the finished timing (continuous batching).
A switch-off of the default stack (no-kv-cache, eager-attention, contiguous-kv) also sets the
class attribute `switches_off` (what it turns off); model/analysis/waterfall.py builds its baseline
from those.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from rooflens.hardware.errors import RooflensError
from rooflens.model.predict.steps import MemoryBreakdown, Prediction, Step, StepPricer, StepTiming

if TYPE_CHECKING:
    from rooflens.model.ops.op import Num, Op
    from rooflens.model.predict.scenario import Scenario


BOOL_WORDS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


@dataclass(frozen=True)
class Param:
    """One parameter of an optimization: its type, default, help and bounds.

    The bounds live here and nowhere else: `coerce` is what the CLI (`--opt`), the
    dashboard's widgets and its links all call, so each rejects the same values with the same
    message. Floats must be finite. `preset="model"` marks a value that names a model preset.
    """

    type: type
    default: Any
    help: str
    lo: float | None = None  # smallest value allowed
    hi: float | None = None  # largest value allowed
    lo_open: bool = False  # lo itself is excluded
    hi_open: bool = False  # hi itself is excluded
    preset: str | None = None  # "model": the value is a model preset id (or a spec file)

    def bounds_text(self) -> str:
        """The allowed range in words: '≥ 1', 'in [0, 1)', '≤ 8'; '' when unbounded."""
        if self.lo is not None and self.hi is not None:
            left, right = "(" if self.lo_open else "[", ")" if self.hi_open else "]"
            return f"in {left}{self.lo:g}, {self.hi:g}{right}"
        if self.lo is not None:
            return f"{'>' if self.lo_open else '≥'} {self.lo:g}"
        if self.hi is not None:
            return f"{'<' if self.hi_open else '≤'} {self.hi:g}"
        return ""

    def coerce(self, owner: str, key: str, raw: Any) -> Any:
        """`raw` (text from a command line or link, or a value) as this parameter's type, in
        bounds; a one-line RooflensError naming the value otherwise."""
        if raw is None:
            return None
        kind = self.type.__name__
        if self.type is bool:
            if isinstance(raw, bool):
                return raw
            word = str(raw).strip().lower()
            if word not in BOOL_WORDS:
                raise RooflensError(f"{owner}: {key}={raw!r} is not one of true/false/yes/no/1/0")
            return BOOL_WORDS[word]
        if isinstance(raw, bool) and self.type is not str:
            raise RooflensError(f"{owner}: {key}={raw!r} is not a valid {kind}")
        try:
            value = self.type(raw)
        except (TypeError, ValueError, OverflowError):
            raise RooflensError(f"{owner}: {key}={raw!r} is not a valid {kind}") from None
        if self.type is int and isinstance(raw, float) and value != raw:
            raise RooflensError(f"{owner}: {key}={raw!r} is not a whole number")
        if self.type is float and not math.isfinite(value):
            raise RooflensError(f"{owner}: {key}={raw!r} must be a finite number")
        if self.type in (int, float) and not self.in_bounds(value):
            raise RooflensError(f"{owner}: {key} must be {self.bounds_text()}, got {value:g}")
        return value

    def in_bounds(self, value: float) -> bool:
        if self.lo is not None and (value < self.lo or (self.lo_open and value == self.lo)):
            return False
        return not (
            self.hi is not None and (value > self.hi or (self.hi_open and value == self.hi))
        )


class Optimization:
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    citation: ClassVar[str] = ""
    order: ClassVar[int] = 50
    params: ClassVar[dict[str, Param]] = {}

    def __init__(self, **values: Any) -> None:
        unknown = sorted(set(values) - set(self.params))
        if unknown:
            known = ", ".join(self.params) or "none"
            raise RooflensError(
                f"--opt {self.name}: unknown parameter {unknown[0]} (takes: {known})"
            )
        self.values: dict[str, Any] = {}
        for key, spec in self.params.items():
            raw = values.get(key, spec.default)
            self.values[key] = spec.coerce(f"--opt {self.name}", key, raw)
        self.check()

    def check(self) -> None:
        """Validate parameter values; raise RooflensError with a one-line message."""

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def label(self) -> str:
        changed = {k: v for k, v in self.values.items() if v != self.params[k].default}
        args = ",".join(f"{k}={v}" for k, v in changed.items())
        return f"{self.name}:{args}" if args else self.name

    # Hooks: identity by default.
    def scenario(self, sc: Scenario) -> Scenario:
        return sc

    def ops(self, ops: list[Op], sc: Scenario, step: Step) -> list[Op]:
        return ops

    def kv_tokens_per_sequence(self, tokens: Num, sc: Scenario) -> Num:
        return tokens

    def memory(self, mem: MemoryBreakdown, sc: Scenario) -> MemoryBreakdown:
        return mem

    def result(self, pred: Prediction, sc: Scenario, pipeline: StepPricer) -> Prediction:
        return pred

    def prompt_tokens(self, tokens: Num) -> Num:
        """Prompt tokens the target prefills for requests of `tokens` (array-safe)."""
        return tokens

    def timing(self, t: StepTiming, sc: Scenario, pipeline: StepPricer) -> StepTiming:
        """`result`'s step-structure change on array step times (array-safe)."""
        return t


# Optimizations that contradict each other: each pair sets one thing two ways.
EXCLUSIVE_PAIRS: tuple[tuple[str, str, str], ...] = (
    ("paged-kv", "contiguous-kv", "the KV cache is either paged in blocks or one slab a request"),
    ("gqa", "mqa", "both set the number of KV heads"),
)


def ordered(opts: list[Optimization]) -> list[Optimization]:
    names = [o.name for o in opts]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise RooflensError(f"--opt {sorted(dupes)[0]} given twice; give each optimization once")
    for a, b, why in EXCLUSIVE_PAIRS:
        if a in names and b in names:
            raise RooflensError(f"--opt {a} and --opt {b} contradict ({why}); give one of them")
    return sorted(opts, key=lambda o: o.order)
