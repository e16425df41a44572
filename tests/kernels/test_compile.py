"""Every kernel compiles to a cubin for Hopper (sm_90) in bf16, checked without a GPU.

The interpreter runs cover what the kernels compute on CPU; this covers what only the compiler
checks (tile minimums of tl.dot, shared-memory budgets, bf16 lowering). It runs
tests/kernels/compile_check.py in a subprocess because the kernels must be decorated with
TRITON_INTERPRET unset, which this test session has already decided otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import triton

CHECK = Path(__file__).with_name("compile_check.py")


def _missing_toolchain() -> str | None:
    try:
        from triton.backends.compiler import GPUTarget  # noqa: F401
        from triton.compiler import ASTSource  # noqa: F401
    except ImportError as error:
        return f"this Triton has no ahead-of-time compile API ({error})"
    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    if not ptxas.is_file() and not os.environ.get("TRITON_PTXAS_PATH"):
        return f"no ptxas at {ptxas} and TRITON_PTXAS_PATH unset"
    return None


@pytest.mark.slow
def test_every_kernel_compiles_for_sm90_in_bf16() -> None:
    missing = _missing_toolchain()
    if missing:
        pytest.skip(missing)
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    result = subprocess.run(
        [sys.executable, str(CHECK), "--arch", "90", "--dtype", "bf16"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
