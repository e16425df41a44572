"""The hook contract (model/optimizations/base.py): every default hook is the identity (a bare
Optimization changes no number of a prediction), `ordered` sorts by `order` and refuses an
optimization given twice or two that contradict each other, and `Param` states its bounds."""

from __future__ import annotations

import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations import parse_opt
from rooflens.model.optimizations.base import EXCLUSIVE_PAIRS, Optimization, Param, ordered
from rooflens.model.predict.api import make_pipeline, make_scenario


class Bare(Optimization):
    name = ""  # not registered: only the defaults of every hook
    order = 50


def test_the_default_hooks_change_nothing() -> None:
    sc = make_scenario("mixtral-8x7b", "h100-sxm", batch=4, tp=2)
    base, bare = make_pipeline(sc).predict(), make_pipeline(sc, [Bare()]).predict()
    assert (bare.ttft_s, bare.tpot_s, bare.e2e_s) == (base.ttft_s, base.tpot_s, base.e2e_s)
    assert bare.memory == base.memory


def test_ordered_sorts_by_order() -> None:
    opts = [parse_opt(n) for n in ("paged-kv", "gqa:kv_heads=4", "flash-decoding")]
    assert [o.order for o in ordered(opts)] == sorted(o.order for o in opts)


def test_twice_or_contradictory_is_one_line() -> None:
    with pytest.raises(RooflensError, match="--opt paged-kv given twice"):
        ordered([parse_opt("paged-kv"), parse_opt("paged-kv:block=32")])
    for a, b, why in EXCLUSIVE_PAIRS:
        with pytest.raises(RooflensError, match=f"--opt {a} and --opt {b} contradict"):
            ordered([parse_opt(a), parse_opt(b)])
        assert why


@pytest.mark.parametrize(("param", "text"), [
    (Param(int, 1, "", lo=1), "≥ 1"),
    (Param(float, 0.5, "", lo=0, hi=1, hi_open=True), "in [0, 1)"),
    (Param(int, 1, "", hi=8), "≤ 8"),
    (Param(int, 1, ""), ""),
])  # fmt: skip
def test_bounds_in_words(param: Param, text: str) -> None:
    assert param.bounds_text() == text
