"""Each optimization parameter's bounds live on its Param (model/optimizations/base.py): the CLI's
--opt, a dashboard link and the listing all reject or state the same values with the same words
(issue 15, "Bad input on the CLI"; issue 16 §4)."""

from __future__ import annotations

import json

import pytest

from rooflens.cli import main
from rooflens.dashboard.settings import from_query
from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations import parse_opt, registry
from rooflens.model.optimizations.base import EXCLUSIVE_PAIRS

BOUNDED = [
    (name, key, p)
    for name, cls in sorted(registry().items())
    for key, p in cls.params.items()
    if p.lo is not None or p.hi is not None
]


NEEDS = {"speculative": "draft=llama-2-7b,"}  # parameters an optimization cannot go without


def _outside(p) -> float:  # type: ignore[no-untyped-def]
    """A value just outside the range (the bound itself when it is open)."""
    if p.lo is not None:
        return p.lo if p.lo_open else p.lo - 1
    return p.hi if p.hi_open else p.hi + 1


def test_the_registry_bounds_what_it_documents() -> None:
    assert len(BOUNDED) >= 30
    assert registry()["speculative"].params["gamma"].bounds_text() == "≥ 1"
    assert registry()["prune"].params["heads"].bounds_text() == "in [0, 1)"
    assert registry()["distill"].params["layers"].bounds_text() == "in (0, 1]"


@pytest.mark.parametrize(("name", "key", "p"), BOUNDED, ids=[f"{n}.{k}" for n, k, _ in BOUNDED])
def test_cli_and_link_reject_the_same_value_with_the_same_message(name, key, p, capsys) -> None:  # type: ignore[no-untyped-def]
    value = _outside(p)
    text = f"{name}:{NEEDS.get(name, '')}{key}={int(value) if p.type is int else value}"
    with pytest.raises(RooflensError) as info:
        parse_opt(text)
    message = str(info.value)
    assert p.bounds_text() in message
    _, problems = from_query({"opt": [text]})
    assert len(problems) == 1 and message in problems[0]
    for inside in (p.lo, p.hi):
        if inside is not None and p.in_bounds(inside):
            parse_opt(
                f"{name}:{NEEDS.get(name, '')}{key}={int(inside) if p.type is int else inside}"
            )


def test_the_listing_states_bounds_and_exclusive_pairs(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["list", "optimizations", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    for name, key, p in BOUNDED:
        assert rows[name]["params"][key]["bounds"] == p.bounds_text()
    for a, b, _ in EXCLUSIVE_PAIRS:
        assert b in rows[a]["exclusive_with"] and a in rows[b]["exclusive_with"]
        with pytest.raises(RooflensError, match="contradict"):
            from rooflens.model.optimizations.base import ordered

            ordered([parse_opt(a), parse_opt(b)])


@pytest.mark.parametrize("word", ["maybe", "on", "2", "", "tru"])
def test_bools_take_only_true_false_yes_no_1_0(word: str) -> None:
    with pytest.raises(RooflensError, match="true/false"):
        parse_opt(f"fusion:rope={word}")
    for yes, no in (("true", "false"), ("YES", "No"), ("1", "0")):
        assert parse_opt(f"fusion:rope={yes}")["rope"] is True
        assert parse_opt(f"fusion:rope={no}")["rope"] is False
