"""The registry of optimizations: every module in this package that defines an Optimization
subclass with a `name` is found automatically; the CLI and dashboard read only this registry.
The pipeline imports only base.py (the hook contract and `ordered`), never this registry: the
registry imports every optimization, and those that price a draft model import the pipeline."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from rooflens.hardware.errors import RooflensError, unknown_name_error
from rooflens.model.optimizations.base import Optimization


@cache
def registry() -> dict[str, type[Optimization]]:
    found: dict[str, type[Optimization]] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Optimization) and obj.name:
                if obj.name in found and found[obj.name] is not obj:
                    raise RuntimeError(f"optimization name {obj.name} registered twice")
                found[obj.name] = obj
    return dict(sorted(found.items()))


def parse_opt(text: str) -> Optimization:
    """`name` or `name:key=value,key=value` -> an Optimization instance."""
    table = registry()
    text = text.strip()
    # a registered name may itself contain ':' (sparsity-2:4): match the longest one first
    known = [n for n in table if text == n or text.startswith(n + ":")]
    if known:
        name = max(known, key=len)
        args = text[len(name) + 1 :]
    else:
        name, _, args = text.partition(":")
        name = name.strip()
    if name not in table:
        raise unknown_name_error("optimization", name, list(table))
    values = {}
    for item in filter(None, (a.strip() for a in args.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise RooflensError(f"--opt {name}: expected key=value, got '{item}'")
        values[key.strip()] = value.strip()
    return table[name](**values)


__all__ = ["parse_opt", "registry"]
