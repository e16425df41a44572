"""The comma lists `rooflens plan` takes (`--tp 1,2,4`, `--gpus all`, `--engine vllm,sglang`)
-> typed tuples, each value checked as the ScenarioRequest field it stands for, with one-line
errors. An empty item (`bf16,,fp8`) is a slip, not something to skip. plan_args.py assembles
the request from them; the CLI's options and the dashboard's planner form share them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rooflens.hardware.errors import FieldError, RooflensError
from rooflens.hardware.presets import get_gpu, gpu_ids
from rooflens.hardware.profiles import ENGINES
from rooflens.model.planner.gpu_prices import default_prices
from rooflens.model.planner.space import SweepSpace
from rooflens.model.predict.request import ScenarioRequest, bad_value
from rooflens.model.predict.request import flag as schema_flag

ALL = "all"  # every GPU with a price (--gpus), every engine (--engine)


def listed(name: str) -> str:
    """A SweepSpace default as an option's text: (1, 2, 4, 8) -> '1,2,4,8'."""
    value = SweepSpace.default(name)
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)


# `rooflens plan`'s scenario options -> (the ScenarioRequest field whose description, bound and
# choices they take; SweepSpace's default). --chunk (chunked prefill's budget) is also ≥ 1.
SCENARIO_OPTIONS: dict[str, tuple[str, str]] = {
    "--tp": ("tp", listed("tp")),
    "--pp": ("pp", listed("pp")),
    "--ep": ("ep", listed("ep")),
    "--weight-dtypes": ("weight_dtype", listed("weight_dtypes")),
    "--kv-dtypes": ("kv_dtype", listed("kv_dtypes")),
    "--profile": ("profile", listed("profile")),
    "--engine": ("engine", listed("engines")),
    "--chunk": ("prefill_chunk", listed("chunk_tokens")),
}


def _items(text: str, what: str) -> list[str]:
    """Comma-separated items; an empty one (`bf16,,fp8`) is a slip, not something to skip."""
    items = [v.strip() for v in text.split(",")]
    if not text.strip() or any(not v for v in items):
        raise RooflensError(f"{what}: empty item in '{text}'; separate values by single commas")
    return items


def int_list(text: str, what: str, lowest: int | None = 1) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in _items(text, what))
    except ValueError:
        message = f"{what}: expected integers separated by commas, got '{text}'"
        raise RooflensError(message) from None
    if lowest is not None and min(values) < lowest:
        raise RooflensError(f"{what}: expected integers ≥ {lowest}, got '{text}'")
    return values


def str_list(
    text: str, what: str = "list", allowed: Sequence[str] | None = None
) -> tuple[str, ...]:
    values = tuple(_items(text, what))
    bad = [v for v in values if allowed is not None and v not in allowed]
    if bad:
        raise RooflensError(f"{what}: '{bad[0]}' is not one of {', '.join(allowed or ())}")
    return values


def scenario_values(text: str, option: str) -> tuple[Any, ...]:
    """The values of a comma list `rooflens plan` tries, each checked as its ScenarioRequest
    field (SCENARIO_OPTIONS): the bound and choices of `predict`'s option."""
    name = SCENARIO_OPTIONS[option][0]
    field = ScenarioRequest.model_fields[name]
    if field.annotation is int:
        values: tuple[Any, ...] = int_list(text, option, lowest=None)
    else:
        values = tuple(_items(text, option))
    for value in values:
        problem = bad_value(ScenarioRequest, name, value)
        if problem:  # in this option's name: `--weight-dtypes 'fp5' is not one of ...`
            raise RooflensError(problem.replace(schema_flag(ScenarioRequest, name), option, 1))
    return values


def engine_list(text: str) -> tuple[str, ...]:
    """`--engine`: the serving engines to search, comma-separated, or 'all'. A slip is a
    FieldError about the `engine` field (a face shows it beside its engine control) that lists
    the engines there are."""
    valid = ", ".join(ENGINES)
    if text.strip() == ALL:
        return ENGINES
    items = [v.strip() for v in text.split(",")]
    if not text.strip():
        raise FieldError("engine", f"{{subject}} names no engine: pick one or more of {valid}",
                         "--engine")  # fmt: skip
    if any(not v for v in items):  # only a typed list has these: the CLI's words
        raise FieldError("engine", f"{{subject}}: empty item in '{text}'; give {valid} "
                         f"separated by single commas, or {ALL}", "--engine")  # fmt: skip
    for v in items:
        if v not in ENGINES:
            raise FieldError("engine", f"{{subject}} '{v}' is not one of {valid}", "--engine")
    return tuple(items)


def gpu_list(text: str, prices: dict[str, float]) -> tuple[str, ...]:
    """'all' = every preset with a price; otherwise ids (or spec files) checked to exist."""
    if text.strip() == ALL:
        return tuple(g for g in gpu_ids() if g in default_prices() or g in prices)
    gpus = str_list(text, "--gpus")
    for g in gpus:
        get_gpu(g)
    return gpus
