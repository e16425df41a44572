"""The planner page searches serving engines as `rooflens plan --engine` does: an Engines
multiselect beside the other axes, the engine named in the frontier table and the explanation,
and a choice the planner refuses told under that widget in the words the CLI's check gives
(`plan_lists.engine_list`, the one check both faces run)."""

from __future__ import annotations

from typing import Any

import pytest
from apptest_helpers import assert_clean

from rooflens.hardware.errors import FieldError
from rooflens.hardware.profiles import ENGINE_NAMES, ENGINES
from rooflens.model.planner.plan_lists import engine_list

CHEAP_PLAN = {"page": "planner", "plan_sim": "0", "plan_wdtypes": ["fp8"],
              "plan_kvdtypes": ["fp8"], "plan_tp": "1,2,8"}  # fmt: skip


def engines_column(at: Any) -> Any:
    """The form's column that holds the Engines widget."""
    return next(c for c in at.columns if any(m.label.startswith("Engines") for m in c.multiselect))


def cli_words(text: str, label: str) -> str:
    with pytest.raises(FieldError) as err:
        engine_list(text)
    return err.value.worded(label)


def test_three_engines_are_searched_and_named(app) -> None:  # type: ignore[no-untyped-def]
    at = app(**CHEAP_PLAN, plan_engines=list(ENGINES))
    assert_clean(at)
    widget = engines_column(at).multiselect[0]
    assert widget.value == list(ENGINES)
    assert widget.options == [ENGINE_NAMES[e] for e in ENGINES]
    frontier = at.table[0].value
    assert set(frontier["engine"]) <= set(ENGINE_NAMES.values()) and len(frontier)
    recommended = at.markdown[0].value
    assert recommended.startswith("- Recommended:")
    assert any(f" on {name}, " in recommended for name in ENGINE_NAMES.values())


def test_an_empty_choice_is_refused_under_the_widget(app) -> None:  # type: ignore[no-untyped-def]
    at = app(**CHEAP_PLAN)
    assert engines_column(at).multiselect[0].value == ["vllm"]  # the sidebar's engine
    engines_column(at).multiselect[0].set_value([])
    next(b for b in at.button if b.label == "Plan").click()
    at.run()
    assert not at.exception and not at.table  # nothing planned
    label = engines_column(at).multiselect[0].label
    assert [e.value for e in engines_column(at).error] == [cli_words("", label)]


def test_a_link_naming_an_unknown_engine_says_so_under_the_widget(app) -> None:  # type: ignore[no-untyped-def]
    at = app(**CHEAP_PLAN, plan_engines=["foo", "sglang"])
    column = engines_column(at)
    assert column.multiselect[0].value == ["sglang"]
    expected = cli_words("foo,sglang", column.multiselect[0].label)
    assert [w.value for w in column.warning] == [f"{expected} (in the link; left out)"]
    assert set(at.table[0].value["engine"]) == {ENGINE_NAMES["sglang"]}
