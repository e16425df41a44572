"""Load GPU and system presets (YAML data files beside this module) and user spec files."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from rooflens.hardware.errors import RooflensError, unknown_name_error, validated
from rooflens.hardware.spec import GPUSpec, LinkSpec

PRESET_DIR = Path(__file__).parent / "presets"
GPU_DIR = PRESET_DIR / "gpus"
LINK_FILE = PRESET_DIR / "links.yaml"
# The packages' own data (presets, calibration profiles, prices, the validator's tables and
# results store) may always be read.
_PACKAGE = Path(__file__).resolve().parents[1]  # src/rooflens
_PACKAGE_DATA = tuple(_PACKAGE / package for package in ("hardware", "model", "validate"))
# None: any path may be read (the CLI: a user on their own machine). A tuple of folders: only
# files under them (and the packages' data) may be read; a server set this for its requests.
_READABLE: ContextVar[tuple[Path, ...] | None] = ContextVar("readable_roots", default=None)


@contextmanager
def files_limited_to(*roots: Path) -> Iterator[None]:
    """Within the block, spec files are read only from `roots` and the packages' data.

    The dashboard wraps each run in this, so that neither a shared link nor a widget can make
    the server open, or reveal the existence of, any other file.
    """
    token = _READABLE.set(tuple(Path(r).resolve() for r in roots))
    try:
        yield
    finally:
        _READABLE.reset(token)


def files_restricted() -> bool:
    return _READABLE.get() is not None


def check_readable(path: Path) -> None:
    """Refuse a path outside the folders `files_limited_to` allows (when it is in force)."""
    roots = _READABLE.get()
    if roots is None:
        return
    resolved = path.resolve()
    if not any(resolved.is_relative_to(root) for root in (*roots, *_PACKAGE_DATA)):
        # the same words whether or not the file exists: no oracle for the server's files
        raise RooflensError(f"'{path}' is not a preset id or an uploaded file; upload it instead")


def read_data_file(path: Path) -> dict[str, Any]:
    """Parse a JSON or YAML file into a dict, with a one-line error for anything else.

    No error quotes the file's content: only its name and where parsing failed.
    """
    check_readable(path)
    if path.is_dir():
        raise RooflensError(f"{path} is a folder; give a JSON or YAML spec file")
    if not path.exists():  # a pipe or a device (/dev/stdin) is read like a file
        raise RooflensError(f"file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark is not content
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise RooflensError(f"cannot parse {path}: {_where(exc)}") from None
    except RecursionError:
        raise RooflensError(f"cannot parse {path}: nested too deeply") from None
    except OSError as exc:
        raise RooflensError(f"cannot read {path}: {exc.strerror or type(exc).__name__}") from None
    if not isinstance(data, dict):
        raise RooflensError(f"{path} must hold a mapping of fields, got {type(data).__name__}")
    return data


def _where(exc: Exception) -> str:
    """Where a parser failed (line and column), never the text it failed on."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    mark = getattr(exc, "problem_mark", None)
    # YAML's problem text may quote a character of the file: keep only its words
    problem = re.sub(r"'[^']*'", "a character", getattr(exc, "problem", None) or "not valid YAML")
    if mark is not None:
        return f"{problem} at line {mark.line + 1} column {mark.column + 1}"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    return type(exc).__name__


def gpu_from_dict(data: dict[str, Any], origin: str) -> GPUSpec:
    return validated(GPUSpec, data, f"GPU spec {origin}")


@cache
def _gpu_presets() -> dict[str, GPUSpec]:
    specs = {}
    for path in sorted(GPU_DIR.glob("*.yaml")):
        spec = gpu_from_dict(read_data_file(path), path.name)
        specs[spec.id] = spec
    return specs


def gpu_ids() -> list[str]:
    return list(_gpu_presets())


def get_gpu(name: str) -> GPUSpec:
    """A preset id (`h100-sxm`) or a path to a user's JSON/YAML spec file."""
    presets = _gpu_presets()
    if name in presets:
        return presets[name]
    if name.endswith((".json", ".yaml", ".yml")) or "/" in name:
        return gpu_from_dict(read_data_file(Path(name)), name)
    raise unknown_name_error("gpu", name, list(presets))


@cache
def links() -> dict[str, LinkSpec]:
    data = read_data_file(LINK_FILE)
    return {key: LinkSpec.model_validate(value) for key, value in data.items()}
