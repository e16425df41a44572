"""The layers of docs/architecture.md hold: imports run one way between the packages, no module
imports another that (directly or not) imports it back, the prediction data types sit below the
pipeline, and the cost model imports no GPU or front-end library.

Imports are read with `ast` from every first-party module, the ones inside functions and under
`TYPE_CHECKING` included: an import placed there still couples the two modules. So are the
imports a package makes by name at run time: the optimization registry imports every module of
its package (pkgutil over `__path__`), so it reaches each of them, and a pipeline that imported
the registry would sit in a loop with the optimizations that price a draft model.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGES = ("argtypes", "io", "hardware", "model", "kernels", "validate", "dashboard", "cli",
            "api")  # fmt: skip
# Which first-party packages each one may import (docs/architecture.md, "Layers").
ALLOWED = {
    "argtypes": set(),
    "io": {"hardware"},  # numbers with units, atomic files: what the faces share
    "hardware": set(),
    "model": {"hardware", "io"},  # io's units only (test_the_cost_model_does_no_io)
    "kernels": set(),
    "validate": {"argtypes", "io", "hardware", "model", "kernels"},
    "dashboard": {"io", "hardware", "model", "validate"},
    "cli": {"argtypes", "io", "hardware", "model", "validate"},
    "api": {"hardware", "model", "validate"},  # the Python API: a face, like the CLI
}
# Libraries the cost model never imports: GPU stacks (it runs on a laptop) and front-ends
# (model/ returns data; the CLI and dashboard format it).
NOT_IN_COST_MODEL = {"torch", "triton", "streamlit", "plotly", "rich", "argparse"}
# model/predict/steps.py holds the data types the pipeline, memory and optimizations share.
ABOVE_STEPS = (
    "rooflens.model.predict.predictor",
    "rooflens.model.predict.memory",
    "rooflens.model.optimizations",
    "rooflens.model.predict.pp_schedule",
)


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        single = SRC / "rooflens" / f"{package}.py"
        paths = [single] if single.is_file() else sorted((SRC / "rooflens" / package).rglob("*.py"))
        for path in paths:
            name = ".".join(path.relative_to(SRC).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _package(module: str) -> str:
    """The layer a module belongs to: rooflens.<package>...."""
    return module.split(".")[1]


MODULES = _modules()


def _imported_names(name: str, path: Path) -> Iterator[str]:
    """Dotted names each import statement of a module reaches, relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            # `from pkg import mod` imports the module pkg.mod; `from mod import f` imports mod
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _first_party(dotted: str) -> str | None:
    while dotted and dotted not in MODULES:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def _imported_at_run_time(name: str, path: Path) -> set[str]:
    """The modules a package imports by name when it runs: all of its own, for a package that
    walks its `__path__` with pkgutil and imports what it finds (model/optimizations' registry)."""
    text = path.read_text(encoding="utf-8")
    if path.name == "__init__.py" and "iter_modules(__path__)" in text and "import_module" in text:
        return {m for m in MODULES if m.startswith(name + ".")}
    return set()


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        targets = {_first_party(d) for d in _imported_names(name, path)}
        targets |= _imported_at_run_time(name, path)
        graph[name] = {t for t in targets if t and t != name}
    return graph


GRAPH = _graph()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_the_graph_sees_every_package_and_known_edges() -> None:
    # guards the checks below against an empty or mis-resolved graph
    assert {_package(m) for m in MODULES} == set(PACKAGES)
    assert "rooflens.model.predict.steps" in GRAPH["rooflens.model.predict.predictor"]
    assert "rooflens.model.optimizations.base" in GRAPH["rooflens.model.predict.predictor"]
    # the registry's run-time imports are edges too
    assert "rooflens.model.optimizations._drafting" in GRAPH["rooflens.model.optimizations"]
    assert "rooflens.hardware.spec" in GRAPH["rooflens.model.predict.scenario"]


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_run_one_way_between_packages(package: str) -> None:
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if _package(module) == package
        for target in targets
        if _package(target) not in ALLOWED[package] | {package}
    )
    assert not wrong, f"{package} may import only {sorted(ALLOWED[package])}: {wrong}"


def test_no_import_cycles() -> None:
    assert _cycles(GRAPH) == []


def test_cycle_finder_finds_a_cycle() -> None:
    # a second route for the check above: the same finder on a graph with a known loop
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _reached(start: str) -> set[str]:
    """Every module `start` imports, directly or not."""
    reached, todo = set(), [start]
    while todo:
        for target in GRAPH[todo.pop()] - reached:
            reached.add(target)
            todo.append(target)
    return reached


def test_prediction_types_sit_below_the_pipeline() -> None:
    above = sorted(m for m in _reached("rooflens.model.predict.steps") if m.startswith(ABOVE_STEPS))
    assert not above, f"model/predict/steps.py must not reach {above}"


@pytest.mark.parametrize(
    "below", ["rooflens.model.predict.memory", "rooflens.model.optimizations.base",
              "rooflens.model.optimizations._drafting", "rooflens.model.pricing.roofline"],
)  # fmt: skip
def test_what_the_pipeline_runs_does_not_reach_back_into_it(below: str) -> None:
    # memory, the hook contract and the drafting hooks are run by the pipeline: they get what
    # they need passed in (the optimizations, `StepPricer.for_scenario`), never by importing it
    assert "rooflens.model.predict.predictor" not in _reached(below)
    assert "rooflens.model.optimizations" not in _reached(below)  # nor the registry


@pytest.mark.parametrize("package", ["hardware", "model"])
def test_cost_model_imports_no_gpu_or_front_end_library(package: str) -> None:
    wrong = sorted(
        f"{module} imports {dotted}"
        for module, path in MODULES.items()
        if _package(module) == package
        for dotted in _imported_names(module, path)
        if dotted.split(".")[0] in NOT_IN_COST_MODEL
    )
    assert not wrong, wrong


def test_the_cost_model_does_no_io() -> None:
    # model/ words its notes with io/units.py and writes no file: files.py is the faces'
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if _package(module) == "model"
        for target in targets
        if _package(target) == "io" and target != "rooflens.io.units"
    )
    assert not wrong, wrong


def test_every_module_docs_architecture_names_exists() -> None:
    # the formula table and the flow name modules by path: a move that forgets the doc fails here
    doc = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    recipe_examples = ("h100-recipe", "kv_headroom", "rmsnorm2", "<")
    named = {
        m
        for m in re.findall(
            r"`((?:hardware|model|io|cli|dashboard|validate|kernels)/[\w/]+\.py)", doc
        )
        if not any(x in m for x in recipe_examples)
    }
    assert len(named) > 30
    missing = sorted(m for m in named if not (SRC / "rooflens" / m).is_file())
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"
