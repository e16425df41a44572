"""File writes that never destroy what is at the path (DESIGN.md, Errors). A regular file (or a
path where nothing is yet) is written to a temp file in its folder and renamed over, so an
interrupted run never leaves half a result; a character device or a FIFO (`-`, /dev/stdout,
/dev/null, a pipe) is written through, never replaced; a symlink is followed and its target
written the same way; anything else (a folder, a socket, a block device) is refused in one line.
`check_writable` applies the same rules to an output path before the work that fills it starts;
`to_json` emits strict JSON (no NaN or Infinity)."""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rooflens.hardware.errors import RooflensError

STDOUT = "-"  # the conventional name of standard output


def _kind(target: Path) -> str:
    """'missing', 'file', 'stream' (character device or FIFO: written through) or 'other'."""
    try:
        mode = target.stat().st_mode  # follows symlinks: a link's target decides
    except FileNotFoundError:
        return "missing" if not target.is_symlink() else "dangling"
    except OSError:
        return "other"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "stream"
    return "folder" if stat.S_ISDIR(mode) else "other"


def _resolved(path: str | Path, what: str) -> tuple[Path, str]:
    text = str(path)
    if text.strip() == "":
        raise RooflensError(f"{what} path is empty; give a file name (or - for stdout)")
    target = Path(text)
    if target.name in ("", ".", ".."):
        raise RooflensError(f"{what} path '{path}' names no file")
    kind = _kind(target)
    if kind == "folder":
        raise RooflensError(f"{what} path '{path}' is a folder; give a file name")
    if kind == "dangling":
        raise RooflensError(f"{what} path '{path}' is a symlink to nothing; remove it or fix it")
    if kind == "other":
        raise RooflensError(
            f"{what} path '{path}' is not a regular file, a character device or a pipe "
            "(a socket or a block device); give a file name"
        )
    if target.is_symlink():  # write the link's target, leave the link in place
        target = Path(os.path.realpath(target))
    return target, kind


def check_writable(path: str | Path, what: str = "output") -> Path:
    """Fail now, in one line, if `path` cannot be written later (a folder, a socket, a missing
    parent that cannot be made, no permission, a read-only or virtual file system).

    A file or a missing path: creates the missing parent folders (as the write would) and a
    temp file beside the target, then removes it. A device or a pipe: checks it is writable.
    The target itself is never touched.
    """
    if str(path) == STDOUT:
        return Path(STDOUT)
    target, kind = _resolved(path, what)
    if kind == "stream":
        if not os.access(target, os.W_OK):
            raise RooflensError(f"cannot write {what} '{path}': permission denied")
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        os.close(fd)
        Path(tmp).unlink()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise RooflensError(f"cannot write {what} '{path}': {reason}") from None
    if kind == "file" and not os.access(target, os.W_OK):
        raise RooflensError(f"cannot write {what} '{path}': permission denied")
    return target


def atomic_write_text(path: str | Path, text: str, what: str = "output") -> Path:
    """Write `text` at `path` by the rules above: temp file + rename for a regular file (or a
    new one), straight through for a device or a pipe, `-` for standard output."""
    if str(path) == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        return Path(STDOUT)
    target, kind = _resolved(path, what)
    if kind == "stream":
        try:
            with open(target, "w") as handle:  # no O_CREAT race: the node exists
                handle.write(text)
        except OSError as exc:
            raise RooflensError(f"cannot write {what} '{path}': {exc.strerror}") from None
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes files owner-only; results are meant to be shared
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise RooflensError(f"cannot write {what} '{path}': {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def atomic_write_csv(path: str | Path, frame: pd.DataFrame, what: str = "output") -> Path:
    return atomic_write_text(path, frame.to_csv(index=False), what)


def read_input_text(path: str | Path, what: str) -> str:
    """A user's text file, whole: a regular file, or a pipe or device (`/dev/stdin`, `<(…)`);
    a UTF-8 byte-order mark is dropped. A folder, a missing path or unreadable bytes end in one
    line that says which."""
    target = Path(path)
    kind = _kind(target)
    if kind == "folder":
        raise RooflensError(f"{what} '{path}' is a folder; give a file")
    if kind in ("missing", "dangling"):
        raise RooflensError(f"{what} not found: {path}")
    try:
        data = target.read_bytes()
    except OSError as exc:
        raise RooflensError(f"cannot read {what} '{path}': {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RooflensError(
            f"{what} '{path}' is not UTF-8 text (byte {exc.start:,} of {len(data):,})"
        ) from None


def to_json(data: Any) -> str:
    """JSON text for scripts; numpy scalars become plain numbers."""

    def default(value: Any) -> Any:
        if isinstance(value, np.generic):
            return value.item()
        raise TypeError(f"not JSON serializable: {type(value).__name__}")

    return json.dumps(data, indent=2, default=default, allow_nan=False)
