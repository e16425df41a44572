"""Hardware: GPU and system specs with cited datasheet numbers, presets, and pricing profiles."""

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import default_system, get_gpu, gpu_ids
from rooflens.hardware.spec import COMPUTE_DTYPES, GPUSpec, LinkSpec, SystemSpec

__all__ = [
    "COMPUTE_DTYPES",
    "GPUSpec",
    "LinkSpec",
    "RooflensError",
    "SystemSpec",
    "default_system",
    "get_gpu",
    "gpu_ids",
]
