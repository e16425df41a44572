"""The planner page on an infeasible request: beside the error it shows the nearest feasible
relaxation (which SLO to loosen, to what value), and planning again at that value (×1.01: the
page shows 3 digits) gives the configuration it named, or a cheaper one; the CLI's re-plan
hint (a flag) is not shown."""

from __future__ import annotations

import re

from apptest_helpers import assert_clean, metrics

CHEAP_PLAN = {"plan_sim": "0", "plan_wdtypes": ["fp8"], "plan_kvdtypes": ["fp8"],
              "plan_tp": "1,2"}  # fmt: skip
LOOSEN = re.compile(r"loosen TPOT p99 from 1 ms to ([\d.]+) ms .*?then is (\d+) × (\S+) ")


def test_infeasible_plan_shows_the_relaxation_and_it_holds(app) -> None:  # type: ignore[no-untyped-def]
    at = app(page="planner", plan_tpot_ms="1", **CHEAP_PLAN)
    assert not at.exception
    assert at.error[0].value == "No configuration meets this load and its SLOs."
    info = at.info[0].value
    assert info.startswith("Nearest feasible relaxation")
    match = LOOSEN.search(info)
    assert match, info
    to_ms, n_gpus, gpu = float(match.group(1)), int(match.group(2)), match.group(3)
    assert to_ms > 1.0
    shown = " ".join(m.value for m in at.markdown)
    assert "--explain-alternatives" not in shown and "Nearest miss" in shown
    at = app(page="planner", plan_tpot_ms=str(to_ms * 1.01), **CHEAP_PLAN)
    assert_clean(at)
    assert not at.error
    assert int(metrics(at)[f"GPUs ({gpu})"].split(" ")[0]) <= n_gpus
