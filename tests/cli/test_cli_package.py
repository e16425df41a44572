"""The cli/ package keeps the shape docs/architecture.md gives it: small modules that say what they
own, and the subcommands of the single-file cli.py it replaced, in the same order."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from rooflens.cli import build_parser

CLI = Path(__file__).resolve().parents[2] / "src" / "rooflens" / "cli"
MODULES = sorted(CLI.glob("*.py"))


def test_the_package_has_its_modules() -> None:
    names = {p.stem for p in MODULES}
    assert {"__init__", "args", "render", "scenario_args", "plan", "plan_report"} <= names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_each_module_is_small_and_says_what_it_owns(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert ast.get_docstring(ast.parse(text)), f"{path.name} has no module docstring"
    assert text.count("\n") <= 300, f"{path.name}: {text.count(chr(10))} lines"


def test_subcommands_keep_their_order() -> None:
    # the order `rooflens --help` listed when the CLI was one file
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == ["list", "memory", "predict", "compare", "kernels", "plan",
                                 "validate", "calibrate", "dashboard"]  # fmt: skip
