"""The Validation page's data: the measurements joined with the predictions, reduced to what the
page shows, and that reduction cached in the process and on disk between server runs.

The page never holds the full join (2.4·10⁶ measured kernel calls × 58 columns):
`compact` keeps every row with only the columns the statistics read (exact numbers on all rows)
and a seeded sample of at most SHOWN_PER_GROUP rows per GPU and operator class with the columns
the figures draw. That view (a few MB) is pickled in CACHE_DIR under a digest of everything the
join reads (the measurement files' path, size and mtime; the cost model's code and data),
written atomically, so a new server reads it back in tens of milliseconds and any change to the
inputs rebuilds it. Older views of the same kind are pruned (KEEP_FILES).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from rooflens.hardware.errors import RooflensError

SHARED_SETS = "shared measurement sets"


def validation_sources() -> list[str]:
    """The shared public measurements, then every device in the validator's results store."""
    from rooflens.validate.store import RESULTS_DIR

    devices = sorted(p.name for p in RESULTS_DIR.glob("*") if any(p.glob("*.csv")))
    return [SHARED_SETS, *devices]


def validation_profiles(source: str) -> tuple[str, ...]:
    """Profiles a source is compared under: a CPU has no calibrated profile (as the CLI)."""
    return ("ideal",) if source == "cpu" else ("ideal", "calibrated")


def _measured(source: str) -> pd.DataFrame:
    """`rooflens validate compare [--device D]`'s table: the shared sets or a stored device."""
    if source == SHARED_SETS:
        from rooflens.validate.datasets import load_kernels

        return load_kernels()
    from rooflens.validate.store import load_results

    frame = load_results(source)
    if frame.empty or "gpu" not in frame:
        raise RooflensError(f"no priced results stored for device '{source}'")
    return frame


PACKAGE = Path(__file__).resolve().parents[1]  # src/rooflens
# Per user, never a shared folder: the cache is unpickled, so only files this user wrote in a
# folder only this user can write are read (a file planted in /tmp would run code on load).
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rooflens"
# What a join depends on: the cost model's code and data (calibration profiles, presets).
CODE_DIRS = ("hardware", "model", "validate")
KEEP_FILES = 4  # views of one kind kept on disk (several checkouts may share the cache)
# What earlier versions of this page left on disk: the full join (~110 MB each, one per change of
# the code or data) and its figures and summaries, in this folder and, before that, in the
# system's temporary folder. No version reads them now; they go when a view is written.
LEGACY_DIRS = (CACHE_DIR, Path(tempfile.gettempdir()) / "rooflens-cache")
LEGACY_NAME = re.compile(r"validation-(?!view-)[A-Za-z0-9._-]+\.pkl")
# Points per (GPU, operator class) drawn: the figures are SVG (no WebGL context to create), and a
# few hundred points per class show the spread; the statistics use every row.
SHOWN_PER_GROUP = 150
# What the statistics read (validate.compare.summarize and the page's tiles) ...
STAT_COLUMNS = ("gpu", "op", "below_ideal", "cache_effect", "ideal_under")
# ... and what the figures draw (validate.report's parity and roofline figures).
FIGURE_COLUMNS = ("gpu", "op", "below_ideal", "measured_s", "flops", "bytes", "compute_dtype")


@dataclass(frozen=True)
class ValidationView:
    """What the page shows of one source's join: `stats`, every row with the columns the
    statistics read; `shown`, at most SHOWN_PER_GROUP rows per (GPU, class) the model does not
    under-predict (the rows the figures draw), in a seeded random order."""

    stats: pd.DataFrame
    shown: pd.DataFrame


def compact(joined: pd.DataFrame, profiles: tuple[str, ...]) -> ValidationView:
    """The page's view of a `validate.compare.join` table (pure; the uncached route's input)."""
    stats = joined[[*STAT_COLUMNS, *(f"error_{p}" for p in profiles)]].copy()
    for name in ("gpu", "op"):  # a few distinct values over 2·10⁵ rows
        stats[name] = stats[name].astype("category")
    kept = joined[~joined["below_ideal"]]
    # One seeded permutation, then the first rows of each group: a group's sample does not
    # depend on which other GPUs or classes are picked.
    shuffled = kept.sample(frac=1.0, random_state=0)
    shown = shuffled.groupby(["gpu", "op"], sort=False).head(SHOWN_PER_GROUP)
    columns = [*FIGURE_COLUMNS, *(f"predicted_{p}_s" for p in profiles)]
    return ValidationView(stats.reset_index(drop=True), shown[columns].reset_index(drop=True))


def picked(frame: pd.DataFrame, gpus: tuple[str, ...], ops: tuple[str, ...]) -> pd.DataFrame:
    """The rows of the picked GPUs and operator classes."""
    return frame[frame["gpu"].isin(gpus) & frame["op"].isin(ops)]


def _join_key(source: str) -> str:
    """A digest of everything the join reads: the measurement files (path, size, mtime) and the
    code and data of the cost model (content), so any change recomputes it."""
    from rooflens.validate.measured_files import DEFAULT_ROOT
    from rooflens.validate.store import RESULTS_DIR

    digest = hashlib.sha256(source.encode())
    root = DEFAULT_ROOT if source == SHARED_SETS else RESULTS_DIR / source
    for path in sorted(root.rglob("*")) if root.is_dir() else []:
        if path.is_file():
            stat = path.stat()
            digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    for folder in CODE_DIRS:
        for path in sorted((PACKAGE / folder).rglob("*")):
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


def _on_disk(name: str, make: Callable[[], Any], kind: str = "") -> Any:
    """`make()`, kept in CACHE_DIR/name between server runs (pickled, written atomically). With
    `kind` (a prefix of `name`), only the KEEP_FILES newest files of that kind are kept."""
    path = CACHE_DIR / name
    if path.is_file() and _private(path):
        try:
            return pd.read_pickle(path)
        except Exception:  # a damaged or foreign cache file: recompute it
            path.unlink(missing_ok=True)
    value = make()
    CACHE_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    pd.to_pickle(value, tmp)  # type: ignore[attr-defined]  # pandas-stubs lacks to_pickle
    tmp.replace(path)  # atomic: a reader never sees half a file
    if kind:
        older = sorted(CACHE_DIR.glob(f"{kind}*.pkl"), key=lambda p: p.stat().st_mtime)
        for stale in older[:-KEEP_FILES]:
            stale.unlink(missing_ok=True)
        prune_legacy()
    return value


def prune_legacy() -> list[Path]:
    """Delete this user's files left by earlier versions of the page (LEGACY_NAME in
    LEGACY_DIRS); returns what went."""
    gone = []
    for folder in LEGACY_DIRS:
        for path in folder.glob("validation-*.pkl") if folder.is_dir() else []:
            if LEGACY_NAME.fullmatch(path.name) and path.stat().st_uid == os.getuid():
                path.unlink(missing_ok=True)
                gone.append(path)
    return gone


def validation_join(source: str) -> pd.DataFrame:
    """`validate.compare.join` of one source's measurements (uncached: ~30 s for the shared
    sets, `benchmarks/validation_join.py`; the page reads `validation_view` instead)."""
    from rooflens.validate.compare import join

    return join(_measured(source), validation_profiles(source))


@st.cache_resource(max_entries=8, show_spinner="Predicting every measured kernel…")
def validation_view(source: str) -> ValidationView:
    """`compact(validation_join(source))`, kept on disk between server runs under a key of its
    inputs (read-only: shared between sessions, not copied)."""
    key = f"validation-view-{re.sub(r'[^A-Za-z0-9._]+', '-', source)}-"

    def make() -> ValidationView:
        return compact(validation_join(source), validation_profiles(source))

    name = f"{key}{_join_key(source)}-{SHOWN_PER_GROUP}.pkl"
    view: ValidationView = _on_disk(name, make, kind=key)
    return view


@st.cache_resource(max_entries=16, show_spinner=False)
def validation_figures(source: str, gpus: tuple[str, ...], ops: tuple[str, ...]) -> tuple[Any, Any]:
    """The validator's own figures (`rooflens validate report`): parity with the ±20 % band per
    profile, and the measured points on each GPU's roofline, drawn from the view's sample and
    as SVG scatters (no WebGL context for the browser to create per chart)."""
    from rooflens.dashboard.figures.validation import as_svg
    from rooflens.validate.report import parity_figure, roofline_figure

    shown = picked(validation_view(source).shown, gpus, ops)
    return as_svg(parity_figure(shown, validation_profiles(source))), as_svg(roofline_figure(shown))


@st.cache_resource(max_entries=32, show_spinner=False)
def validation_summary(source: str, gpus: tuple[str, ...], ops: tuple[str, ...]) -> pd.DataFrame:
    """`validate.compare.summarize` of the picked rows, on every row (read-only)."""
    from rooflens.validate.compare import summarize

    rows = picked(validation_view(source).stats, gpus, ops)
    return summarize(rows, profiles=validation_profiles(source))
