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
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import sweeps
from dashboard.labels import advice_text
from dashboard.settings import DEFAULTS, UPLOAD_PREFIX, Settings
from hardware.errors import RooflensError
from model.pipeline import Prediction
from model.presets import get_model
from model.scenario import Scenario
from model.spec import ModelSpec

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
        from model.planner.prices import price_per_gpu_hour
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
    from dashboard.breakdown import time_breakdown as split

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
    from model.waterfall import split_stack, waterfall

    return waterfall(sweeps.scenario(s), split_stack([stack]), s.opts)


def opt_name(text: str) -> str:
    """`quant:scheme=awq` -> `quant` (a registered name may itself hold ':', e.g. sparsity-2:4)."""
    from model.optimizations import registry

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
    from model.waterfall import split_stack

    return split_stack([stack])


def _extends(longer: str, stack: str) -> bool:
    from model.optimizations import parse_opt
    from model.waterfall import switches_off

    short, long = _items(stack), _items(longer)
    if not short or len(long) <= len(short) or long[: len(short)] != short:
        return False
    try:
        return not any(switches_off(parse_opt(item)) for item in long[len(short) :])
    except RooflensError:
        return False  # let the stack's own computation report it


@st.cache_data(max_entries=64, show_spinner=False)
def _contributions(s: Settings) -> list[dict[str, Any]]:
    from model.contributions import contributions as leave_one_out

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
    from model.planner.plan import plan
    from model.planner.request import build_request

    key = repr(sorted({**request, "simulate_requests": simulate_requests}.items()))
    plans = _plans()
    if key not in plans:
        space, workload = build_request(**request)
        result = plan(space, workload, simulate_requests=simulate_requests, progress=progress)
        if len(plans) >= MAX_PLANS:
            plans.pop(next(iter(plans)))
        plans[key] = (result.to_dict(), result.sweep.feasible)
    return plans[key]


SHARED_SETS = "shared measurement sets"


def validation_sources() -> list[str]:
    """The shared public measurements, then every device in the validator's results store."""
    from validate.store import RESULTS_DIR

    devices = sorted(p.name for p in RESULTS_DIR.glob("*") if any(p.glob("*.csv")))
    return [SHARED_SETS, *devices]


def validation_profiles(source: str) -> tuple[str, ...]:
    """Profiles a source is compared under: a CPU has no calibrated profile (as the CLI)."""
    return ("ideal",) if source == "cpu" else ("ideal", "calibrated")


def _measured(source: str) -> pd.DataFrame:
    """`rooflens validate compare [--device D]`'s table: the shared sets or a stored device."""
    if source == SHARED_SETS:
        from validate.datasets import load_kernels

        return load_kernels()
    from validate.store import load_results

    frame = load_results(source)
    if frame.empty or "gpu" not in frame:
        raise RooflensError(f"no priced results stored for device '{source}'")
    return frame


REPO = Path(__file__).resolve().parents[1]
CACHE_DIR = Path(tempfile.gettempdir()) / "rooflens-cache"
# What a join depends on: the cost model's code and data (calibration profiles, presets).
CODE_DIRS = ("hardware", "model", "validate")
SHOWN_PER_GROUP = 400  # points per (GPU, operator class) drawn; statistics use every row


def _join_key(source: str) -> str:
    """A digest of everything the join reads: the measurement files (path, size, mtime) and the
    code and data of the cost model (content), so any change recomputes it."""
    from validate.datasets import DEFAULT_ROOT
    from validate.store import RESULTS_DIR

    digest = hashlib.sha256(source.encode())
    root = DEFAULT_ROOT if source == SHARED_SETS else RESULTS_DIR / source
    for path in sorted(root.rglob("*")) if root.is_dir() else []:
        if path.is_file():
            stat = path.stat()
            digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    for folder in CODE_DIRS:
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix in (".py", ".yaml", ".yml", ".json") and path.is_file():
                digest.update(path.read_bytes())
    return digest.hexdigest()[:24]


def _on_disk(name: str, make: Callable[[], Any]) -> Any:
    """`make()`, kept in CACHE_DIR/name between server runs (pickled, written atomically)."""
    path = CACHE_DIR / name
    if path.is_file():
        try:
            return pd.read_pickle(path)
        except Exception:  # a damaged or foreign cache file: recompute it
            path.unlink(missing_ok=True)
    value = make()
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    pd.to_pickle(value, tmp)
    tmp.replace(path)  # atomic: a reader never sees half a file
    return value


@st.cache_resource(max_entries=8, show_spinner="Predicting every measured kernel…")
def validation_join(source: str) -> pd.DataFrame:
    """`validate.compare.join` of one source's measurements (read-only: shared, not copied),
    kept on disk between server runs under a key of its inputs (a cold join takes ~10 s)."""
    from validate.compare import join

    def make() -> pd.DataFrame:
        return join(_measured(source), validation_profiles(source))

    result: pd.DataFrame = _on_disk(f"validation-{_join_key(source)}.pkl", make)
    return result


@st.cache_resource(max_entries=16, show_spinner=False)
def validation_figures(source: str, gpus: tuple[str, ...], ops: tuple[str, ...]) -> tuple[Any, Any]:
    """The validator's own figures (`rooflens validate report`): parity with the ±20 % band per
    profile, and the measured points on each GPU's roofline; drawn from at most
    SHOWN_PER_GROUP seeded samples per GPU and operator class, so the page stays light (and
    kept on disk with the join, as building them takes seconds)."""
    from validate.report import parity_figure, roofline_figure

    def make() -> tuple[Any, Any]:
        joined = validation_join(source)
        rows = joined[joined["gpu"].isin(gpus) & joined["op"].isin(ops)]
        shown = rows.sample(frac=1.0, random_state=0).groupby(["gpu", "op"]).head(SHOWN_PER_GROUP)
        return parity_figure(shown, validation_profiles(source)), roofline_figure(shown)

    picked = hashlib.sha256(repr((gpus, ops, SHOWN_PER_GROUP)).encode()).hexdigest()[:12]
    return tuple(_on_disk(f"validation-figures-{_join_key(source)}-{picked}.pkl", make))  # type: ignore[return-value]


@st.cache_resource(max_entries=32, show_spinner=False)
def validation_summary(source: str, gpus: tuple[str, ...], ops: tuple[str, ...]) -> pd.DataFrame:
    """`validate.compare.summarize` of the picked rows (read-only; kept on disk as well)."""
    from validate.compare import summarize

    def make() -> pd.DataFrame:
        joined = validation_join(source)
        rows = joined[joined["gpu"].isin(gpus) & joined["op"].isin(ops)]
        return summarize(rows, profiles=validation_profiles(source))

    picked = hashlib.sha256(repr((gpus, ops)).encode()).hexdigest()[:12]
    result: pd.DataFrame = _on_disk(f"validation-summary-{_join_key(source)}-{picked}.pkl", make)
    return result
