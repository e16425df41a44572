"""Cached calls into `model/` for the pages, and the home of uploaded spec files.

Caching (Streamlit reruns the whole script on every widget change):
- a `Prediction` is cached as a resource (never mutated, so no copy per rerun; a 70B run costs
  milliseconds, but a page may ask for it several times);
- sweeps are cached as data, keyed by the settings *minus the field they sweep* (and minus the
  price, which no sweep reads), so moving the batch slider does not recompute the batch sweep.
Errors are not cached: a bad setting raises `RooflensError` again on every rerun, cheaply.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from rooflens.dashboard import sweeps
from rooflens.dashboard.labels import advice_text
from rooflens.dashboard.settings import DEFAULTS, UPLOAD_PREFIX, Settings
from rooflens.dashboard.validation_data import (  # noqa: F401 (the Validation page asks compute for them)
    SHARED_SETS,
    SHOWN_PER_GROUP,
    picked,
    validation_figures,
    validation_profiles,
    validation_sources,
    validation_summary,
    validation_view,
)
from rooflens.hardware.errors import RooflensError
from rooflens.model.predict.scenario import Scenario
from rooflens.model.predict.steps import Prediction
from rooflens.model.specs.presets import get_model
from rooflens.model.specs.spec import ModelSpec

UPLOAD_DIR = Path(tempfile.gettempdir()) / "rooflens-uploads"


def save_upload(file_name: str, data: bytes) -> str:
    """Store an uploaded spec under its content hash; returns the `upload:` reference.

    The file keeps its (sanitised) name: `model.presets.get_model` recognises a Hugging Face
    config by the name `config.json` or by its keys. Written atomically (temp file + rename).
    """
    digest = hashlib.sha256(data).hexdigest()[:16]
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", Path(file_name).name) or "spec.json"
    # An HF config.json takes its name from `_name_or_path`, else from its folder: call that
    # folder "uploaded" rather than the hash.
    path = UPLOAD_DIR / digest / ("uploaded" if safe == "config.json" else "") / safe
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return UPLOAD_PREFIX + str(path)


@st.cache_resource(max_entries=128, show_spinner=False)
def _scenario(s: Settings) -> Scenario:
    return sweeps.scenario(s)


def scenario(s: Settings) -> Scenario:
    """The sidebar's scenario before optimizations (cached; never mutated)."""
    return _scenario(s.with_(price_per_gpu_hour=0.0))


def model_spec(s: Settings) -> ModelSpec:
    return get_model(s.model_ref)


def gpu_price(s: Settings, gpu_id: str) -> tuple[float, str]:
    """($ per GPU-hour, its source): the sidebar's price, else the documented rental price of
    the GPU preset (model/planner/prices.yaml), else (0, reason) and cost stays unset."""
    if s.price_per_gpu_hour > 0:
        return s.price_per_gpu_hour, "your price"
    try:
        from rooflens.model.planner.gpu_prices import price_per_gpu_hour
    except ImportError:
        return 0.0, "no price list installed"
    try:
        return price_per_gpu_hour(gpu_id, {})
    except RooflensError:
        return 0.0, f"no listed price for {gpu_id}"


@st.cache_resource(max_entries=256, show_spinner=False)
def _prediction(s: Settings) -> Prediction:
    return sweeps.predict(s)


def prediction(s: Settings) -> Prediction:
    return _prediction(s.with_(price_per_gpu_hour=0.0))


@st.cache_data(max_entries=128, show_spinner=False)
def _notes(s: Settings) -> list[str]:
    from rooflens.model.analysis.quant_vs_bf16 import quant_slower_than_bf16

    pred = prediction(s)
    slower = quant_slower_than_bf16(pred, s.opts, alternatives=True)
    return [*pred.notes, *([slower.note] if slower else [])]


def notes(s: Settings) -> list[str]:
    """The prediction's notes, and whether its quantized decode costs more than bf16 (and on
    which measured tables), as `rooflens predict` prints them."""
    return _notes(s.with_(price_per_gpu_hour=0.0))


@st.cache_data(max_entries=128, show_spinner=False)
def _ops_frame(s: Settings) -> pd.DataFrame:
    return prediction(s).ops_frame()


def ops_frame(s: Settings) -> pd.DataFrame:
    return _ops_frame(s.with_(price_per_gpu_hour=0.0))


@st.cache_data(max_entries=128, show_spinner=False)
def _fit_advice_text(s: Settings) -> str:
    """What to change in the sidebar so it fits, each suggestion checked to fit."""
    return advice_text(sweeps.fit_advice(s))


def fit_advice(s: Settings) -> str:
    return _fit_advice_text(s.with_(price_per_gpu_hour=0.0))


@st.cache_data(max_entries=128, show_spinner=False)
def _time_breakdown(s: Settings) -> pd.DataFrame:
    from rooflens.dashboard.breakdown import time_breakdown as split

    return split(prediction(s))


def time_breakdown(s: Settings) -> pd.DataFrame:
    return _time_breakdown(s.with_(price_per_gpu_hour=0.0))


def _neutral(s: Settings, *swept: str) -> Settings:
    return s.with_(price_per_gpu_hour=0.0, **{name: getattr(DEFAULTS, name) for name in swept})


@st.cache_data(max_entries=64, show_spinner="Sweeping batch…")
def _batch_sweep(s: Settings) -> pd.DataFrame:
    return sweeps.batch_sweep(s)


def batch_sweep(s: Settings) -> pd.DataFrame:
    return _batch_sweep(_neutral(s, "batch"))


@st.cache_data(max_entries=64, show_spinner="Sweeping context…")
def _context_sweep(s: Settings) -> pd.DataFrame:
    return sweeps.context_sweep(s)


def context_sweep(s: Settings) -> pd.DataFrame:
    return _context_sweep(_neutral(s, "prompt_len"))


@st.cache_data(max_entries=64, show_spinner="Sweeping TP…")
def _tp_sweep(s: Settings) -> pd.DataFrame:
    return sweeps.tp_sweep(s)


def tp_sweep(s: Settings) -> pd.DataFrame:
    return _tp_sweep(_neutral(s, "tp"))


@st.cache_data(max_entries=64, show_spinner="Computing max batch grid…")
def _max_batch_grid(s: Settings) -> pd.DataFrame:
    return sweeps.max_batch_grid(s)


def max_batch_grid(s: Settings) -> pd.DataFrame:
    # The grid sets batch, prompt and output per cell; the current KV dtype only adds a row.
    return _max_batch_grid(_neutral(s, "batch", "prompt_len", "output_len"))


@st.cache_data(max_entries=64, show_spinner="Computing the waterfall…")
def _waterfall(s: Settings, stack: str) -> list[dict[str, Any]]:
    from rooflens.model.analysis.waterfall import split_stack, waterfall

    return waterfall(sweeps.scenario(s), split_stack([stack]), s.opts)


def opt_name(text: str) -> str:
    """`quant:scheme=awq` -> `quant` (a registered name may itself hold ':', e.g. sparsity-2:4)."""
    from rooflens.model.optimizations import registry

    known = [n for n in registry() if text == n or text.startswith(n + ":")]
    return max(known, key=len) if known else text.partition(":")[0].strip()


def stack_overrides(s: Settings, stack: str) -> list[str]:
    """The sidebar's optimizations the stack also lists: the stack's own setting wins in its
    stages, so each is given once (issue 15: "--opt quant given twice")."""
    named = {opt_name(item) for item in _items(stack)}
    return [o for o in s.opts if opt_name(o) in named]


def waterfall(s: Settings, stack: str, other: str = "") -> list[dict[str, Any]]:
    """`rooflens compare --stack STACK` with the sidebar's optimizations in every stage, less
    those the stack lists itself (`stack_overrides`: the stack's setting wins).

    When `other` is this stack followed by ordinary (not switch-off) optimizations, its
    waterfall starts with this one's stages (stage i depends only on the optimizations before
    it), so they are taken from its cached result instead of being computed twice.
    """
    s = s.with_(price_per_gpu_hour=0.0)
    overridden = stack_overrides(s, stack)
    if overridden:
        s = s.with_(opts=tuple(o for o in s.opts if o not in overridden))
    if other and _extends(other, stack) and not stack_overrides(s, other):
        return _waterfall(s, other.strip())[: len(_items(stack)) + 1]
    return _waterfall(s, stack.strip())


def _items(stack: str) -> list[str]:
    from rooflens.model.analysis.waterfall import split_stack

    return split_stack([stack])


def _extends(longer: str, stack: str) -> bool:
    from rooflens.model.analysis.waterfall import switches_off
    from rooflens.model.optimizations import parse_opt

    short, long = _items(stack), _items(longer)
    if not short or len(long) <= len(short) or long[: len(short)] != short:
        return False
    try:
        return not any(switches_off(parse_opt(item)) for item in long[len(short) :])
    except RooflensError:
        return False  # let the stack's own computation report it


@st.cache_data(max_entries=64, show_spinner=False)
def _contributions(s: Settings) -> list[dict[str, Any]]:
    from rooflens.model.analysis.contributions import contributions as leave_one_out

    return leave_one_out(sweeps.scenario(s), s.opts, prediction(s))


def contributions(s: Settings) -> list[dict[str, Any]]:
    """What each sidebar optimization buys against the same stack without it."""
    return _contributions(s.with_(price_per_gpu_hour=0.0))


@st.cache_resource(max_entries=1, show_spinner=False)
def _plans() -> dict[str, tuple[dict[str, Any], pd.DataFrame]]:
    """Plans already made, by request (a process-wide cache kept by hand, so the sweep can
    report progress to the page while it runs, which a cached function's body cannot)."""
    return {}


MAX_PLANS = 16


def capacity_plan(
    *, simulate_requests: int, progress: Callable[[int, int], None] | None = None, **request: Any
) -> tuple[dict[str, Any], pd.DataFrame]:
    """`rooflens plan` for the planner form: (the plan as JSON-ready data, the feasible
    configurations kept by the sweep); `progress(done, total)` is told as the sweep goes."""
    from rooflens.model.planner.plan import plan
    from rooflens.model.planner.plan_args import build_request

    key = repr(sorted({**request, "simulate_requests": simulate_requests}.items()))
    plans = _plans()
    if key not in plans:
        space, workload = build_request(**request)
        result = plan(space, workload, simulate_requests=simulate_requests, progress=progress)
        if len(plans) >= MAX_PLANS:
            plans.pop(next(iter(plans)))
        plans[key] = (result.to_dict(), result.sweep.feasible)
    return plans[key]
