"""One dashboard scenario as plain, hashable data, and its round trip through URL query parameters.

`Settings` holds exactly what the sidebar sets; `scenario_kwargs()` hands it to
`model.api.make_scenario`. Query parameters carry only the fields that differ from the defaults,
so a shared link stays short; a value the URL gets wrong is reported and replaced by its
default, never guessed. Uploaded spec files (`upload:` references) live on the server that
received them and are left out of links.

A link is untrusted input: every value it carries is a preset id, a choice from a fixed list or
a number, for every field, the pinned baseline's and each optimization's parameters included;
none can name a file on the server (tests/dashboard/test_url_security.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from hardware.errors import RooflensError
from hardware.presets import gpu_ids
from hardware.profiles import PROFILES
from hardware.systems import system_ids
from model.dtypes import ACTIVATION_DTYPES, STORAGE_DTYPES
from model.optimizations import parse_opt
from model.presets import model_ids
from model.scenario import DEFAULT_OVERHEAD_BYTES, DEFAULT_PREFILL_CHUNK_TOKENS

UPLOAD_PREFIX = "upload:"
# field name -> query parameter name (short, stable: shared links depend on them)
QUERY_NAMES: dict[str, str] = {
    "model": "model",
    "gpu": "gpu",
    "batch": "batch",
    "prompt_len": "prompt",
    "output_len": "output",
    "weight_dtype": "wdtype",
    "act_dtype": "adtype",
    "kv_dtype": "kvdtype",
    "tp": "tp",
    "pp": "pp",
    "ep": "ep",
    "group_size": "group",
    "profile": "profile",
    "overhead_gb": "overhead_gb",
    "prefill_chunk": "chunk",
    "opts": "opt",
    "price_per_gpu_hour": "price",
}
# Allowed values, checked when a link is read (the sidebar's widgets accept nothing else).
CHOICES: dict[str, tuple[str, ...]] = {
    "weight_dtype": STORAGE_DTYPES,
    "act_dtype": ACTIVATION_DTYPES,
    "kv_dtype": ("", *STORAGE_DTYPES),
    "profile": PROFILES,
}
MINIMUMS: dict[str, float] = {
    "batch": 1,
    "prompt_len": 1,
    "output_len": 1,
    "tp": 1,
    "pp": 1,
    "ep": 1,
    "group_size": 1,
    "overhead_gb": 0.0,
    "prefill_chunk": 0,
    "price_per_gpu_hour": 0.0,
}
# Fields that name a preset: a link may name only these (uploads stay on their server).
PRESET_IDS: dict[str, Callable[[], list[str]]] = {
    "model": model_ids,
    "gpu": lambda: [*gpu_ids(), *system_ids()],  # a GPU or a system preset (dgx-h100)
}
BASELINE_PARAM = "baseline"
PAGE_PARAM = "page"


@dataclass(frozen=True)
class Settings:
    """What one prediction is for, as the sidebar sets it (units in the names)."""

    model: str = "llama-3-70b"  # preset id, or UPLOAD_PREFIX + path of an uploaded file
    gpu: str = "h100-sxm"
    batch: int = 8
    prompt_len: int = 512
    output_len: int = 128
    weight_dtype: str = "bf16"
    act_dtype: str = "bf16"
    kv_dtype: str = ""  # "" = the activation dtype (what engines do)
    tp: int = 4
    pp: int = 1
    ep: int = 1
    group_size: int = 128
    profile: str = "calibrated"  # as `rooflens plan` and the planner page
    overhead_gb: float = DEFAULT_OVERHEAD_BYTES / 1e9
    prefill_chunk: int = DEFAULT_PREFILL_CHUNK_TOKENS
    opts: tuple[str, ...] = field(default_factory=tuple)  # `name[:k=v,...]`, sorted
    price_per_gpu_hour: float = 0.0  # $ per GPU-hour; 0 = not set

    def __post_init__(self) -> None:
        object.__setattr__(self, "opts", tuple(sorted(self.opts)))

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)

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

    def scenario_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of `model.api.make_scenario` after its model and gpu arguments."""
        return {
            "batch": self.batch,
            "prompt_len": self.prompt_len,
            "output_len": self.output_len,
            "weight_dtype": self.weight_dtype,
            "act_dtype": self.act_dtype,
            "kv_dtype": self.kv_dtype or None,
            "group_size": self.group_size,
            "tp": self.tp,
            "pp": self.pp,
            "ep": self.ep,
            "profile": self.profile,
            "overhead_bytes": self.overhead_gb * 1e9,
            "prefill_chunk_tokens": self.prefill_chunk,
        }

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["opts"] = list(self.opts)
        return out


DEFAULTS = Settings()


def to_query(s: Settings) -> dict[str, str | list[str]]:
    """Query parameters for the fields that differ from the defaults (uploads left out)."""
    out: dict[str, str | list[str]] = {}
    for f in fields(Settings):
        value, default = getattr(s, f.name), getattr(DEFAULTS, f.name)
        if value == default:
            continue
        if isinstance(value, str) and value.startswith(UPLOAD_PREFIX):
            continue
        key = QUERY_NAMES[f.name]
        out[key] = list(value) if isinstance(value, tuple) else _text(value)
    return out


def from_query(params: Mapping[str, Sequence[str]]) -> tuple[Settings, list[str]]:
    """Settings from query parameters (each a list of values), and what could not be read."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for f in fields(Settings):
        key = QUERY_NAMES[f.name]
        raw = list(params.get(key, []))
        if not raw:
            continue
        default = getattr(DEFAULTS, f.name)
        if isinstance(default, tuple):
            values[f.name] = tuple(_opts_from_link(key, raw, problems))
            continue
        text = raw[-1]
        if isinstance(default, str):
            if text.startswith(UPLOAD_PREFIX):
                problems.append(f"{key}: uploaded files cannot come from a link; using the default")
                continue
            if f.name in PRESET_IDS and text not in PRESET_IDS[f.name]():
                problems.append(f"{key}={text!r} is not a preset; using {default}")
                continue
            allowed = CHOICES.get(f.name)
            if allowed is not None and text not in allowed:
                problems.append(f"{key}={text!r} is not one of {', '.join(allowed)}; using default")
                continue
            values[f.name] = text
            continue
        try:
            value = type(default)(text)
        except ValueError:
            kind = type(default).__name__
            problems.append(f"{key}={text!r} is not a valid {kind}; using {default}")
            continue
        if not (math.isfinite(value) and value >= MINIMUMS[f.name]):
            problems.append(
                f"{key}={text!r} is not a finite number ≥ {MINIMUMS[f.name]:g}; using {default}"
            )
            continue
        values[f.name] = value
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


def baseline_to_param(s: Settings) -> str:
    return json.dumps(to_query(s), separators=(",", ":"), sort_keys=True)


def baseline_from_param(text: str) -> tuple[Settings | None, list[str]]:
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
