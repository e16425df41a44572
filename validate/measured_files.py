"""Reading the shared measurement folder (../shared/data/measured/): where it is, the units and
names its tables use (milliseconds, dtype spellings, device names -> GPU preset ids, engine
labels), and reading one table with a one-line warning for a file that is not one. The loaders
of each source are validate/aiconfigurator.py and validate/vidur.py; validate/datasets.py joins
them into the kernel table.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd

from hardware.errors import RooflensError

DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "shared" / "data" / "measured"
MS = 1e-3
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "int8": "int8"}
DEVICE_IDS = {"NVIDIA A100-SXM4-80GB": "a100-sxm-80gb", "a100": "a100-sxm-80gb", "a40": "a40"}


def gpu_id(name: str) -> str:
    if name not in DEVICE_IDS:
        raise RooflensError(f"measured device '{name}' has no GPU preset; add it to DEVICE_IDS")
    return DEVICE_IDS[name]


def dtype_names(values: pd.Series) -> pd.Series:
    return values.map(lambda v: DTYPES.get(str(v), str(v)))


def rel(path: Path, root: Path) -> str:
    return str(path.relative_to(root))


def impl(d: pd.DataFrame) -> pd.Series:
    return d["framework"].str.lower() + "-" + d["version"] + ":" + d["kernel_source"]


IMPL_COLUMNS = ("framework", "version", "kernel_source", "device", "latency")


class SkippedFile(UserWarning):
    """A measurement file left out because it is not one (empty, truncated, foreign)."""


def read_table(path: Path, columns: tuple[str, ...]) -> pd.DataFrame | None:
    """A measurement table, or None with a one-line warning naming the file when it cannot be
    read or lacks the columns its loader needs (the CLI prints it as `warning: ...`)."""
    try:
        frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except pd.errors.EmptyDataError:
        reason = "empty"
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError) as exc:
        reason = f"unreadable ({type(exc).__name__})"
    else:
        missing = [c for c in columns if c not in frame.columns]
        if not missing and len(frame):
            return frame
        reason = f"no {missing[0]} column (foreign or truncated)" if missing else "no rows"
    warnings.warn(f"skipping {path}: {reason}", SkippedFile, stacklevel=2)
    return None


def check_root(root: Path) -> Path:
    if not root.is_dir():
        raise RooflensError(f"measurement folder not found: {root} (pass --measured DIR)")
    return root


def concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    if not frames:
        return pd.DataFrame(columns=["op", "measured_s", "impl", "gpu", "source"])
    return pd.concat(frames, ignore_index=True)
