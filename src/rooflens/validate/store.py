"""The results store: measurement tables with provenance under `validate/results/<device>/`.

One CSV per run, in the kernel CSV contract of DESIGN.md plus `measured_s` (median seconds per
call), the timing quantiles, `impl` and the provenance of the run on every row (device name,
driver, CUDA, torch, triton, git commit, date), written atomically (temp file + rename) so an
interrupted run never leaves half a file. `RunWriter` stores a run row by row as it is measured
and resumes an unfinished one; `load_results` reads a device's runs back, skipping (with a
line naming it) any CSV that is not a results table.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import math
import os
import platform
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from rooflens.hardware.errors import RooflensError
from rooflens.io.files import atomic_write_csv, check_writable

RESULTS_DIR = Path(__file__).parent / "results"
REPO = Path(__file__).resolve().parents[3]  # the repository (src/rooflens/validate/..)
PROVENANCE_COLUMNS = ("device_name", "driver", "cuda", "torch", "triton", "git_commit", "date")


def git_commit() -> str:
    """$ROOFLENS_COMMIT when set (a copy of the tree on a lent GPU machine, whose git folder, if
    any, is not this tree's: the first run there named the session's first commit), else the
    checkout's HEAD commit with '+dirty' when tracked files differ, else 'unknown'."""
    given = os.environ.get("ROOFLENS_COMMIT")
    if given:
        return given

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                              timeout=10, check=True)  # fmt: skip
        return done.stdout.strip()

    try:
        head = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def provenance_base() -> dict[str, str]:
    """What every fit or run records: code version and date (no device facts)."""
    return {
        "git_commit": git_commit(),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "rooflens": _version("rooflens"),
    }


def device_provenance(device: str) -> dict[str, str]:
    """Device name, driver, CUDA, torch and triton versions of this run (torch imported here)."""
    import torch

    base = provenance_base()
    info = {
        "device_name": platform.processor() or platform.machine(),
        "driver": "n/a",
        "cuda": "n/a",
        "torch": torch.__version__,
        "triton": _version("triton"),
        "git_commit": base["git_commit"],
        "date": base["date"],
    }
    if device == "cpu":
        info["device_name"] = _cpu_name()
    else:
        info["device_name"] = torch.cuda.get_device_name()
        info["cuda"] = str(torch.version.cuda)
        info["driver"] = _nvidia_driver()
    return info


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _nvidia_driver() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True)  # fmt: skip
        return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def device_dir(device: str, root: Path = RESULTS_DIR) -> Path:
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", device):
        raise RooflensError(f"device name '{device}' must be lowercase letters, digits, . _ -")
    return root / device


def write_results(
    frame: pd.DataFrame, device: str, run: str, provenance: dict[str, Any], root: Path = RESULTS_DIR
) -> Path:
    """Write one run atomically as `<root>/<device>/<run>.csv` with provenance columns."""
    if frame.empty:
        raise RooflensError("nothing measured: the results table is empty")
    out = frame.copy()
    for column in PROVENANCE_COLUMNS:
        out[column] = str(provenance.get(column, "unknown"))
    return atomic_write_csv(device_dir(device, root) / f"{run}.csv", out)


def run_name(suite: str) -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + f"-{suite}"


# Columns every stored run has; a CSV without them is not a results table (a foreign file).
REQUIRED_COLUMNS = ("op", "impl", "measured_s")


def read_run(path: Path) -> pd.DataFrame:
    """One stored run, or a one-line RooflensError saying why it is not one (empty, truncated,
    foreign, unreadable)."""
    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise RooflensError(f"{path.name} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError) as exc:
        raise RooflensError(f"{path.name} cannot be read as CSV ({type(exc).__name__})") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise RooflensError(f"{path.name} is not a results table (no {', '.join(missing)} column)")
    if frame.empty:
        raise RooflensError(f"{path.name} holds no rows")
    times = pd.to_numeric(frame["measured_s"], errors="coerce")
    if times.isna().any() or frame[list(REQUIRED_COLUMNS)].isna().any().any():
        raise RooflensError(f"{path.name} is truncated or has rows without a measured time")
    return frame.assign(measured_s=times)


def load_results(
    device: str, root: Path = RESULTS_DIR, on_skip: Callable[[str], None] | None = None
) -> pd.DataFrame:
    """Every run stored for a device, concatenated (empty frame when there is none). A file
    that is not a readable results table is skipped, and `on_skip` hears one line naming it."""
    folder = device_dir(device, root)
    files = sorted(folder.glob("*.csv")) if folder.is_dir() else []
    frames = []
    for f in files:
        try:
            frames.append(read_run(f).assign(run=f.stem))
        except RooflensError as exc:
            if on_skip is not None:
                on_skip(f"skipping {folder / f.name}: {exc}")
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    if "gpu" in out.columns:  # a spec stored relative to the store (the CPU's) is found again
        out["gpu"] = [_spec_ref(g, root) for g in out["gpu"].astype(str)]
    return out


def _spec_ref(gpu: str, root: Path) -> str:
    """A preset id stays; a spec path relative to the results root becomes a usable path."""
    candidate = root / gpu
    return (
        str(candidate) if gpu.endswith((".yaml", ".yml", ".json")) and candidate.is_file() else gpu
    )


class RunWriter:
    """A run stored as it is measured: each batch of rows is appended to
    `<root>/<device>/<suite>-unfinished.csv` (rewritten atomically, so a crash or Ctrl-C keeps
    every finished batch), and `finish` renames it to its dated run name.

    A writer for a suite that already has an unfinished file on this device resumes it: `done`
    says which (suite row, impl) pairs are measured, so the run skips them (`fresh=True` starts
    over). The `gpu` column holds a preset id, or a spec path relative to `root`, never an
    absolute path, so the store stays valid when its folder moves.
    """

    def __init__(self, device: str, suite: str, provenance: dict[str, Any], root: Path,
                 gpu_ref: str, fresh: bool = False) -> None:  # fmt: skip
        self.root, self.suite = root, suite
        self.path = check_writable(
            device_dir(device, root) / f"{suite}-unfinished.csv", "results store"
        )  # before anything is measured
        self.provenance = {c: str(provenance.get(c, "unknown")) for c in PROVENANCE_COLUMNS}
        self.gpu = _relative_ref(gpu_ref, root)
        self.rows: list[dict[str, Any]] = []
        if self.path.is_file() and not fresh:
            stored = read_run(self.path)
            if str(stored["device_name"].iloc[0]) != self.provenance["device_name"]:
                raise RooflensError(
                    f"{self.path} was measured on {stored['device_name'].iloc[0]}, not "
                    f"{self.provenance['device_name']}; pass --fresh to start over"
                )
            self.rows = [{str(k): v for k, v in r.items()} for r in stored.to_dict("records")]
        self._done = {_row_key(r) for r in self.rows}

    @property
    def resumed(self) -> int:
        return len(self._done)

    def done(self, row: dict[str, Any], impl: str) -> bool:
        return _row_key({**row, "impl": impl}) in self._done

    def append(self, batch: list[dict[str, Any]]) -> None:
        """Store a batch of measured rows now (one atomic rewrite of the unfinished file)."""
        if not batch:
            return
        stamped = [{**r, "gpu": self.gpu, **self.provenance} for r in batch]
        self.rows.extend(stamped)
        self._done.update(_row_key(r) for r in stamped)
        atomic_write_csv(self.path, pd.DataFrame(self.rows))

    def frame(self) -> pd.DataFrame:
        """Every row of the run so far (resumed ones included), `gpu` usable for predictions."""
        out = pd.DataFrame(self.rows)
        if not out.empty:
            out["gpu"] = [_spec_ref(str(g), self.root) for g in out["gpu"]]
        return out

    def finish(self) -> Path:
        """Rename the unfinished file to its dated run name; the run is complete."""
        if not self.rows:
            raise RooflensError("nothing measured: the results table is empty")
        target = self.path.with_name(f"{run_name(self.suite)}.csv")
        self.path.replace(target)
        return target


def _relative_ref(gpu_ref: str, root: Path) -> str:
    path = Path(gpu_ref)
    if path.is_absolute() and path.resolve().is_relative_to(root.resolve()):
        return path.resolve().relative_to(root.resolve()).as_posix()
    return gpu_ref


def _row_key(row: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """What identifies a measured (suite row, impl): its shape columns, numbers normalised
    (a CSV reads 4096 back as 4096.0), empty cells left out."""
    skip = {"measured_s", "q20_s", "q80_s", "timing", "copies", "gpu", "run", *PROVENANCE_COLUMNS}
    items = []
    for key, value in row.items():
        if key in skip or value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        try:
            text = f"{float(value):.12g}"
        except (TypeError, ValueError):
            text = str(value)
        items.append((str(key), text))
    return tuple(sorted(items))
