"""Atomic file writes: a temp file in the target folder, then a rename (DESIGN.md, Errors), so an
interrupted run never leaves a half-written result."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


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

    return json.dumps(data, indent=2, default=default)
