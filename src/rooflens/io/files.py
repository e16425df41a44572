"""Atomic file writes: a temp file in the target folder, then a rename (DESIGN.md, Errors), so an
interrupted run never leaves a half-written result; `check_writable` tries an output path before
the work that fills it starts; `to_json` emits strict JSON (no NaN or Infinity)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rooflens.hardware.errors import RooflensError


def check_writable(path: str | Path, what: str = "output") -> Path:
    """Fail now, in one line, if a file cannot be written at `path` later (a folder, a missing
    parent that cannot be made, no permission, a read-only or virtual file system).

    Creates the missing parent folders (as the write would) and a temp file beside the target,
    then removes the temp file; the target itself is not touched.
    """
    target = Path(path)
    if str(path).strip() == "" or target.name in ("", ".", ".."):
        raise RooflensError(f"{what} path '{path}' names no file")
    if target.is_dir():
        raise RooflensError(f"{what} path '{path}' is a folder; give a file name")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        os.close(fd)
        Path(tmp).unlink()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise RooflensError(f"cannot write {what} '{path}': {reason}") from None
    if target.exists() and not os.access(target, os.W_OK):
        raise RooflensError(f"cannot write {what} '{path}': permission denied")
    return target


def atomic_write_text(path: str | Path, text: str) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes files owner-only; results are meant to be shared
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def atomic_write_csv(path: str | Path, frame: pd.DataFrame) -> Path:
    return atomic_write_text(path, frame.to_csv(index=False))


def to_json(data: Any) -> str:
    """JSON text for scripts; numpy scalars become plain numbers."""

    def default(value: Any) -> Any:
        if isinstance(value, np.generic):
            return value.item()
        raise TypeError(f"not JSON serializable: {type(value).__name__}")

    return json.dumps(data, indent=2, default=default, allow_nan=False)
