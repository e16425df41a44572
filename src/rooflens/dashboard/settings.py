"""One dashboard scenario as plain, hashable data, and its round trip through URL query parameters.

`Settings` is the scenario schema (model/predict/request.py's `ScenarioRequest`) with the
dashboard's
defaults and its price; its link keys, choices, minimums and preset fields are read from the
schema's field metadata, not declared here. `request()` hands it to `model.predict.api.scenario_of`.
Query parameters carry only the fields that differ from the defaults,
so a shared link stays short; a value the URL gets wrong is reported and replaced by its
default, never guessed. Uploaded spec files (`upload:` references) live on the server that
received them and are left out of links.

A link is untrusted input: every value it carries is a preset id, a choice from a fixed list or
a number, for every field, the pinned baseline's and each optimization's parameters included;
none can name a file on the server (tests/dashboard/test_url_security.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import Field, field_validator

from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations import parse_opt
from rooflens.model.predict.request import (
    PRESETS,
    ScenarioRequest,
    bad_value,
    choices,
    flag,
    lower_bound,
    meta,
    with_defaults,
)
from rooflens.model.predict.scenario import DEFAULT_OVERHEAD_BYTES
from rooflens.model.specs.presets import model_ids

UPLOAD_PREFIX = "upload:"
BASELINE_PARAM = "baseline"
PAGE_PARAM = "page"


class _Dashboard(ScenarioRequest):
    """The scenario request plus what only the dashboard sets (a price), and its helpers."""

    price_per_gpu_hour: float = Field(
        0.0,
        ge=0,
        description="your rental or amortised price, $ per GPU-hour; 0 uses the GPU's listed "
        "on-demand price (model/planner/prices.yaml, with its source) where there is one",
        json_schema_extra={
            "query": "price",
            "label": "Price ($ per GPU-hour, 0 = listed)",
            "unit": "$/GPU-hour",
            "step": 0.1,
        },
    )

    @field_validator("opts")
    @classmethod
    def _canonical_opts(cls, opts: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(opts))  # one link, one cache entry, whatever the order picked

    @property
    def n_gpus(self) -> int:
        return self.tp * self.pp

    @property
    def model_ref(self) -> str:
        """What `model.presets.get_model` takes: a preset id or a file path."""
        return self.model.removeprefix(UPLOAD_PREFIX)

    @property
    def gpu_ref(self) -> str:
        return self.gpu.removeprefix(UPLOAD_PREFIX)

    def request(self) -> ScenarioRequest:
        """The scenario request these settings make (`model.predict.api.scenario_of` builds it)."""
        values = {name: getattr(self, name) for name in ScenarioRequest.model_fields}
        return ScenarioRequest(**{**values, "model": self.model_ref, "gpu": self.gpu_ref})

    def scenario_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of `model.predict.api.make_scenario` after model and gpu."""
        return {k: v for k, v in dict(self.request()).items() if k not in ("model", "gpu")}

    def to_dict(self) -> dict[str, Any]:
        out = dict(self)
        out["opts"] = list(self.opts)
        return out


# Where the dashboard opens: what the capacity planner and a 70B deployment look like (the
# CLI's defaults are the schema's own). kv_dtype None = the activations' dtype.
DASHBOARD_DEFAULTS: dict[str, Any] = {
    "model": "llama-3-70b",  # preset id, or UPLOAD_PREFIX + path of an uploaded file
    "gpu": "h100-sxm",
    "batch": 8,
    "tp": 4,
    "overhead_gb": DEFAULT_OVERHEAD_BYTES / 1e9,
}
Settings = with_defaults(_Dashboard, DASHBOARD_DEFAULTS, "Settings")
Settings.__doc__ = "What one prediction is for, as the sidebar sets it (ScenarioRequest's fields)."
FIELDS = Settings.model_fields
DEFAULTS = Settings()

# field name -> query parameter name (short, stable: shared links depend on them)
QUERY_NAMES: dict[str, str] = {name: meta(f).get("query", name) for name, f in FIELDS.items()}
# Allowed values, checked when a link is read (the sidebar's widgets accept nothing else).
CHOICES: dict[str, tuple[str, ...]] = {
    name: allowed for name, f in FIELDS.items() if (allowed := choices(f)) is not None
}
MINIMUMS: dict[str, float] = {
    name: bound[0] for name, f in FIELDS.items() if (bound := lower_bound(f)) is not None
}
# Fields that name a preset: a link may name only these (uploads stay on their server).
PRESET_IDS: dict[str, Callable[[], list[str]]] = {
    name: PRESETS[meta(f)["preset"]] for name, f in FIELDS.items() if "preset" in meta(f)
}


def to_query(s: Any) -> dict[str, str | list[str]]:
    """Query parameters for the fields that differ from the defaults (uploads left out)."""
    out: dict[str, str | list[str]] = {}
    for name in FIELDS:
        value, default = getattr(s, name), getattr(DEFAULTS, name)
        if value == default:
            continue
        if isinstance(value, str) and value.startswith(UPLOAD_PREFIX):
            continue
        key = QUERY_NAMES[name]
        out[key] = list(value) if isinstance(value, tuple) else _text(value)
    return out


def from_query(params: Mapping[str, Sequence[str]]) -> tuple[Any, list[str]]:
    """Settings from query parameters (each a list of values), and what could not be read."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for name, f in FIELDS.items():
        key = QUERY_NAMES[name]
        raw = list(params.get(key, []))
        if not raw:
            continue
        default = getattr(DEFAULTS, name)
        if name == "opts":
            values[name] = tuple(_opts_from_link(key, raw, problems))
            continue
        text = raw[-1]
        if choices(f) is not None or name in PRESET_IDS:
            if text.startswith(UPLOAD_PREFIX):
                problems.append(f"{key}: uploaded files cannot come from a link; using the default")
                continue
            if name in PRESET_IDS and text not in PRESET_IDS[name]():
                problems.append(f"{key}={text!r} is not a preset; using {default}")
                continue
            if not text and default is None:
                continue  # an empty choice: the default (kvdtype= means "same as activations")
            value: Any = text
        else:
            kind = int if f.annotation is int else float
            try:
                value = kind(text)
            except ValueError:
                problems.append(f"{key}={text!r} is not a valid {kind.__name__}; using {default}")
                continue
        problem = bad_value(Settings, name, value)
        if problem:  # in the widget's words, as every other error of the page
            said = f"“{meta(f)['label']}”" + problem.removeprefix(flag(Settings, name))
            problems.append(f"{said} (link: {key}={text}); using {default}")
            continue
        values[name] = value
    return Settings(**values), problems


def _opts_from_link(key: str, raw: Sequence[str], problems: list[str]) -> list[str]:
    """The optimizations a link names that parse, whose model parameters are presets."""
    kept = []
    for text in filter(None, raw):
        try:
            opt = parse_opt(text)
        except RooflensError as exc:
            problems.append(f"{key}: {exc}; left out")
            continue
        refs = [(k, v) for k, v in opt.values.items() if opt.params[k].preset == "model" and v]
        bad = [k for k, v in refs if v not in model_ids()]
        if bad:
            problems.append(f"{key}: {opt.name}'s {bad[0]} must be a model preset; left out")
            continue
        kept.append(text)
    return kept


def baseline_to_param(s: Any) -> str:
    return json.dumps(to_query(s), separators=(",", ":"), sort_keys=True)


def baseline_from_param(text: str) -> tuple[Any, list[str]]:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None, ["baseline: the link's baseline is not valid JSON; no baseline pinned"]
    if not isinstance(data, dict):
        return None, ["baseline: expected a mapping of settings; no baseline pinned"]
    params = {k: [str(x) for x in (v if isinstance(v, list) else [v])] for k, v in data.items()}
    settings, problems = from_query(params)
    return settings, [f"baseline {p}" for p in problems]


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.10g}"
    return str(value)
