"""Tests for kernels/__init__.py: the registry lines up with the kernel modules and tests."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import rooflens.kernels as kernels
from rooflens.kernels import KERNELS, PREDICT_OP, SHARED_MODULES

KERNELS_DIR = Path(kernels.__file__).parent
TESTS_DIR = Path(__file__).parent


def test_registry_names_line_up_with_modules_and_tests() -> None:
    modules = {p.stem for p in KERNELS_DIR.glob("*.py")} - {"__init__", *SHARED_MODULES}
    assert set(KERNELS) == modules
    assert set(PREDICT_OP) == modules
    assert all((KERNELS_DIR / f"{name}.py").is_file() for name in SHARED_MODULES)
    for name in KERNELS:
        assert (TESTS_DIR / f"test_{name}.py").is_file(), f"no tests/kernels/test_{name}.py"


def test_registry_entries_are_the_module_functions() -> None:
    for name, (launcher, ref, cost) in KERNELS.items():
        module = importlib.import_module(f"rooflens.kernels.{name}")
        assert launcher is getattr(module, name)
        assert ref is getattr(module, f"{name}_ref")
        assert cost is getattr(module, f"{name}_cost")


def test_every_cost_returns_integer_flops_and_bytes() -> None:
    for name, entry in KERNELS.items():
        params = inspect.signature(entry.cost).parameters
        assert "dtype" in params, f"{name}_cost takes no dtype"
        assert next(iter(params)) != "self"
    samples = {
        "gemm": dict(m=3, n=5, k=7, dtype="fp16"),
        "w8a16_gemm": dict(m=3, n=5, k=64, dtype="fp16", group_size=32),
        "w4a16_gemm": dict(m=3, n=5, k=64, dtype="bf16", group_size=32),
        "flash_attention": dict(
            batch=1, seq_len=9, n_heads=4, n_kv_heads=2, head_dim=64, dtype="fp16"
        ),
        "decode_attention": dict(
            batch=2, kv_len=9, n_heads=4, n_kv_heads=2, head_dim=64, dtype="fp16"
        ),
        "paged_decode_attention": dict(
            batch=2, kv_len=9, n_heads=4, n_kv_heads=2, head_dim=64, dtype="fp16"
        ),
        "rmsnorm": dict(n_rows=3, hidden=64, dtype="bf16"),
    }
    assert set(samples) == set(KERNELS)
    for name, kwargs in samples.items():
        flops, bytes_ = KERNELS[name].cost(**kwargs)
        assert isinstance(flops, int) and isinstance(bytes_, int), name
        assert flops > 0 and bytes_ > 0, name
