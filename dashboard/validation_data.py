"""The Validation page's data: the measurements, their join with the predictions, its summary
and figures, cached in the process and on disk between server runs.

A cold join of ~2·10⁵ measured kernels takes ~10 s; it, the summary and the figures are pickled
in CACHE_DIR under a digest of everything they read (the measurement files' path, size and
mtime; the cost model's code and data), written atomically, so a new server reads them back in a
fraction of a second and any change to the inputs recomputes them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from hardware.errors import RooflensError

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
# Per user, never a shared folder: the cache is unpickled, so only files this user wrote in a
# folder only this user can write are read (a file planted in /tmp would run code on load).
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rooflens"
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


def _private(path: Path) -> bool:
    """Whether `path` and its folder belong to this user and no one else may write them."""
    if not hasattr(os, "getuid"):
        return True
    for p in (path, path.parent):
        st_ = p.stat()
        if st_.st_uid != os.getuid() or st_.st_mode & 0o022:
            return False
    return True


def _on_disk(name: str, make: Callable[[], Any]) -> Any:
    """`make()`, kept in CACHE_DIR/name between server runs (pickled, written atomically)."""
    path = CACHE_DIR / name
    if path.is_file() and _private(path):
        try:
            return pd.read_pickle(path)
        except Exception:  # a damaged or foreign cache file: recompute it
            path.unlink(missing_ok=True)
    value = make()
    CACHE_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
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
