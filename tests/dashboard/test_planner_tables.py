"""Issue 26 §5: the planner's tables explain themselves. The simulation check lists each
configuration once and says why it counts fewer requests than the form asks for; the Pareto
table is thinned by a stated rule and explains goodput; Explore says how its TTFT differs from
the planner's."""

from __future__ import annotations

import re

import pytest
from apptest_helpers import assert_clean, metrics

from rooflens.dashboard.headline import USD_PER_M_LABEL
from rooflens.model.planner.pareto import thinning_rule
from rooflens.model.planner.sim import WARMUP_SHARE

PLAN = {"page": "planner", "plan_sim": "1000", "plan_wdtypes": ["fp8", "bf16"],
        "plan_kvdtypes": ["fp8"]}  # fmt: skip


@pytest.mark.slow
def test_the_simulation_and_pareto_tables_explain_themselves(app) -> None:  # type: ignore[no-untyped-def]
    at = app(**PLAN)
    assert_clean(at)
    pareto, sims = (t.value for t in at.table)
    # §4: one name and one format for $ per M output tokens, in the tile, the explanation and
    # the table ("$1.732" beside Explore's "$11.8" before)
    tile = metrics(at)[USD_PER_M_LABEL]
    assert re.fullmatch(r"\$[\d,.]+", tile)
    assert len(re.sub(r"\D", "", tile).strip("0")) <= 3  # three significant digits
    assert any(f"= {tile} per million output tokens" in m.value for m in at.markdown)
    assert any(c.endswith(USD_PER_M_LABEL) for c in pareto.columns)
    captions = " ".join(c.value for c in at.caption)
    # each simulated configuration once (the recommended one was also the frontier's first)
    assert sims["configuration"].is_unique
    assert any("recommended" in role for role in sims["role"])
    # the requests counted: the form's 1,000 less the 10 % warm-up, said in words
    counted = 1000 - int(WARMUP_SHARE * 1000)
    assert set(sims["requests counted"]) == {f"{counted:,}"}
    assert f"drops the first 10 % ({1000 - counted:,}) as warm-up" in captions
    assert f"{counted:,} requests are counted" in captions
    # the thinning rule and what goodput is, under the frontier table
    rule = next(c.value for c in at.caption if c.value.startswith("Frontier thinned"))
    hidden = int(rule.split("; ")[1].split(" frontier")[0].replace(",", ""))
    assert rule.startswith(thinning_rule(hidden))
    assert "replicas times one replica's rate at its batch cap" in captions
    # goodput per replica: the total over the replicas column (a disaggregated pair's
    # decode replicas serve the requests)
    for total, replicas in zip(pareto["goodput (per replica)"], pareto["replicas"], strict=True):
        whole, per = total.split(" requests/s (")
        serving = replicas.split(" + ")[-1].removesuffix(" decode").replace(",", "")
        assert float(per.rstrip(")").replace(",", "")) == pytest.approx(
            float(whole.replace(",", "")) / int(serving), rel=0.01
        )


def test_explore_says_its_ttft_prefills_the_whole_batch(app) -> None:  # type: ignore[no-untyped-def]
    at = app(batch="48", prompt="512")
    assert_clean(at)
    assert USD_PER_M_LABEL in metrics(at)  # the planner's name for the same quantity
    said = " ".join(c.value for c in at.caption)
    assert "prefills the whole batch at once (48 prompts of 512 tokens" in said
    assert "the capacity planner's TTFT is per request" in said
