"""Pricing profiles: how far below the datasheet a GPU really runs each kind of operator.

`ideal` is the datasheet roofline with no overheads, a lower bound on any real kernel.
`calibrated` scales peaks by achieved fractions and adds a fixed per-call overhead, fitted from
measurements (validate/ writes `hardware/calibration/<gpu-id>.yaml` with its provenance). A GPU
without its own file uses `generic.yaml`, which validate/ derives from the measured GPUs.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from hardware.errors import RooflensError
from hardware.presets import read_data_file
from hardware.spec import GPUSpec

CALIBRATION_DIR = Path(__file__).parent / "calibration"
PROFILES = ("ideal", "calibrated")


class KindEfficiency(BaseModel):
    """Achieved fractions of peak for one operator kind, and its fixed cost per call."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    compute_fraction: float = Field(default=1.0, gt=0, le=1.0)
    memory_fraction: float = Field(default=1.0, gt=0, le=1.0)
    overhead_s: float = Field(default=0.0, ge=0, description="fixed time per kernel call, s")


class Profile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    gpu_id: str | None = Field(default=None, description="GPU it was fitted on (None = any)")
    kinds: dict[str, KindEfficiency] = Field(
        default_factory=dict,
        description="op kind -> efficiency; key 'default' for the rest",
    )
    comm_bandwidth_fraction: float = Field(default=1.0, gt=0, le=1.0)
    comm_latency_scale: float = Field(default=0.0, ge=0, description="x link latency per step")
    source: str = Field(description="how it was obtained: datasheet, or fit data and date")

    def kind(self, kind: str) -> KindEfficiency:
        return self.kinds.get(kind) or self.kinds.get("default") or KindEfficiency()


IDEAL = Profile(
    name="ideal",
    source="datasheet peaks, perfect overlap, no launch overhead: a lower bound",
)


@cache
def _load(path: Path) -> Profile:
    return Profile.model_validate(read_data_file(path))


def get_profile(name: str, gpu: GPUSpec) -> Profile:
    """`ideal`, or `calibrated` for this GPU (its own fit, else the generic derived profile)."""
    if name == "ideal":
        return IDEAL
    if name != "calibrated":
        raise RooflensError(f"unknown profile '{name}': use one of {', '.join(PROFILES)}")
    own = CALIBRATION_DIR / f"{gpu.id}.yaml"
    return _load(own if own.is_file() else CALIBRATION_DIR / "generic.yaml")
