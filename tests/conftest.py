"""Suite-wide setup. Triton reads TRITON_INTERPRET when a kernel is decorated, so it is set here,
before any kernel module is imported, whenever no CUDA GPU is present: kernels then run on the
CPU through Triton's interpreter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI replays the same examples every run (a failure there is reproducible, never luck); a
# developer's run keeps exploring new ones.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


HAS_CUDA = _cuda_available()
if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
MEASURED = SHARED / "data" / "measured"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if HAS_CUDA:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none found); runs on the validator's GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def measured_dir() -> Path:
    if not MEASURED.is_dir():
        pytest.skip(f"shared measurements not found at {MEASURED}")
    return MEASURED
