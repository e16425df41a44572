"""The results store: measurement tables with provenance under `validate/results/<device>/`.

One CSV per run, in the kernel CSV contract of DESIGN.md plus `measured_s` (median seconds per
call), the timing quantiles, `impl` and the provenance of the run on every row (device name,
driver, CUDA, torch, triton, git commit, date), written atomically (temp file + rename) so an
interrupted run never leaves half a file. `load_results` reads a device's runs back.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd

from hardware.errors import RooflensError
from model.io import atomic_write_csv

RESULTS_DIR = Path(__file__).parent / "results"
REPO = Path(__file__).resolve().parents[1]
PROVENANCE_COLUMNS = ("device_name", "driver", "cuda", "torch", "triton", "git_commit", "date")


def git_commit() -> str:
    """The checkout's HEAD commit, with '+dirty' when tracked files differ ('unknown' if none)."""

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


def load_results(device: str, root: Path = RESULTS_DIR) -> pd.DataFrame:
    """Every run stored for a device, concatenated (empty frame when there is none)."""
    folder = device_dir(device, root)
    files = sorted(folder.glob("*.csv")) if folder.is_dir() else []
    if not files:
        return pd.DataFrame()
    return pd.concat([pd.read_csv(f).assign(run=f.stem) for f in files], ignore_index=True)
