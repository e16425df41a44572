"""Fixtures and switches for the kernel tests.

Without CUDA the kernels run in Triton's CPU interpreter. Triton reads TRITON_INTERPRET when a
kernel is decorated, i.e. when a `kernels` module is imported, so the variable is set here, at
conftest import time, before any test module imports `kernels`. (If another conftest or test
imports `kernels` first, the top-level tests/conftest.py must set it instead; the check below
turns that mistake into one clear error instead of dozens of failures.)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# Lets the test modules `import kernel_tolerances` under any pytest import mode.
sys.path.insert(0, str(Path(__file__).parent))

from rooflens.kernels.common import interpreting


def pytest_configure(config: pytest.Config) -> None:
    # Registered here too so that `pytest tests/kernels` works without the project's ini file.
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped with a reason otherwise")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")


def _decorated_for_interpreter() -> bool:
    """Whether the kernels were decorated while TRITON_INTERPRET was set."""
    from triton.runtime.interpreter import InterpretedFunction

    from rooflens.kernels.rmsnorm import _rmsnorm_kernel

    return isinstance(_rmsnorm_kernel, InterpretedFunction)


def on_gpu() -> bool:
    """Kernels compile for a CUDA device (rather than run in the interpreter)."""
    return torch.cuda.is_available() and not interpreting()


@pytest.fixture(scope="session", autouse=True)
def _interpreter_switch_took_effect() -> None:
    if interpreting() and not _decorated_for_interpreter():
        pytest.exit(
            "kernels/ was imported before TRITON_INTERPRET=1 was set; set it at the top of "
            "tests/conftest.py when torch.cuda.is_available() is False",
            returncode=4,
        )


@pytest.fixture(autouse=True)
def _skip_gpu_tests_without_cuda(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("gpu") and not on_gpu():
        reason = "no CUDA GPU" if not torch.cuda.is_available() else "TRITON_INTERPRET is set"
        pytest.skip(f"needs a CUDA GPU and compiled Triton kernels ({reason})")


@pytest.fixture(autouse=True)
def _seed() -> None:
    # Fresh random inputs per test, reproducible across runs.
    torch.manual_seed(0)


@pytest.fixture
def device() -> str:
    """Where the kernels run: the GPU when there is one, else the CPU through the interpreter."""
    return "cuda" if on_gpu() else "cpu"
