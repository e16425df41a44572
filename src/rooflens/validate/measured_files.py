"""Reading the shared measurement folder (../shared/data/measured/): where it is, the units and
names its tables use (milliseconds, dtype spellings, device names -> GPU preset ids, engine
labels), and reading one table with a one-line warning for a file that is not one. The loaders
of each source are validate/aiconfigurator.py and validate/vidur.py; validate/datasets.py joins
them into the kernel table.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pandas as pd

from rooflens.hardware.errors import RooflensError
from rooflens.model.pricing.kernel_columns import distinct_text, map_distinct
from rooflens.model.specs.quant import FAMILIES

# ../shared/data/measured beside the checkout (src/rooflens/validate/ -> the checkout's parent),
# or wherever ROOFLENS_MEASURED points (an installed wheel has no checkout beside it).
DEFAULT_ROOT = Path(
    os.environ.get("ROOFLENS_MEASURED")
    or Path(__file__).resolve().parents[4] / "shared" / "data" / "measured"
)
MS = 1e-3
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "int8": "int8"}
DEVICE_IDS = {
    "NVIDIA A100-SXM4-80GB": "a100-sxm-80gb",
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA B300 SXM6 AC": "b300",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "rtx-pro-6000",
    "a100": "a100-sxm-80gb",
    "a40": "a40",
}


def engine_precision(labels: pd.Series) -> pd.DataFrame:
    """`dtype`, `weight_dtype` (None where weights are at `dtype`) and `quant` (the engine's
    label: the kernel family, model/specs/quant.py) of each row; an unknown label is refused in
    one line."""
    unknown = sorted(distinct_text(labels) - set(FAMILIES))
    if unknown:
        raise RooflensError(
            f"measured precision '{unknown[0]}' is not a known kernel family; add it to "
            "model/specs/quant.py FAMILIES"
        )
    text = labels.astype(str)
    return pd.DataFrame(
        {
            "dtype": map_distinct(text, lambda label: FAMILIES[label][0]),
            "weight_dtype": map_distinct(text, lambda label: FAMILIES[label][1]),
            "quant": text,
        },
        index=labels.index,
    )


def gpu_id(name: str) -> str:
    if name not in DEVICE_IDS:
        raise RooflensError(f"measured device '{name}' has no GPU preset; add it to DEVICE_IDS")
    return DEVICE_IDS[name]


def dtype_names(values: pd.Series) -> pd.Series:
    return map_distinct(values, lambda v: DTYPES.get(str(v), str(v)))


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
