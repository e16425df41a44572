"""The serving engine as a search axis of `rooflens plan` (issue 23 §1: "the planner may search
the engine as one more axis, as it does TP and dtypes"): three engines return configurations of
each; a search over several is the union of the one-engine searches, so its best is never worse
than one engine's; one engine plans as before; each engine is priced by its own calibration,
checked against `rooflens.predict` with that engine; ties keep a stated order; and the engine is
named wherever a configuration is listed."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rooflens
import rooflens.cli as cli
from rooflens.hardware.errors import RooflensError
from rooflens.hardware.profiles import ENGINES
from rooflens.model.planner.check import RANK
from rooflens.model.planner.curves import TOKEN_GRID
from rooflens.model.planner.mixed import pairs
from rooflens.model.planner.plan import Plan, cheapest, plan
from rooflens.model.planner.plan_args import build_request
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.sweep import run_sweep
from rooflens.model.planner.workload import SLO, LengthDist, ServingWorkload

SPACE = dict(model="llama-3-8b", gpus=("h100-sxm",), tp=(1, 8), max_gpus=16)
ALL = dict(SPACE, engines=ENGINES)
KEY = ["gpu", "tp", "weight_dtype", "kv_dtype", "mode", "n_gpus", "prefill_replicas", "batch"]


def workload(rate: float, ttft: float = 1.0, tpot: float = 0.05, output: str = "200"
             ) -> ServingWorkload:  # fmt: skip
    return ServingWorkload(rate_per_s=rate, prompt=LengthDist.parse("800"),
                           output=LengthDist.parse(output),
                           slo=SLO(ttft_p99_s=ttft, tpot_p99_s=tpot))  # fmt: skip


def timeless(p: Plan) -> dict[str, Any]:
    """A plan's JSON without the times it took (the sweep's, the plan's, each simulation's)."""
    out = {k: v for k, v in p.to_dict().items() if k not in ("elapsed_s", "sweep_s")}
    out["simulations"] = [{k: v for k, v in s.items() if k != "wall_s"} for s in p.simulations]
    return out


def test_three_engines_return_configurations_of_each() -> None:
    result = run_sweep(SweepSpace(**ALL), workload(8.0))
    assert {g.engine for g in result.curves} == set(ENGINES)
    assert set(result.rows["engine"]) == set(ENGINES)
    assert set(result.feasible["engine"]) == set(ENGINES)  # each engine can serve this load


def test_several_engines_search_the_union_of_one_engine_searches() -> None:
    w = workload(8.0)
    both = run_sweep(SweepSpace(**ALL), w)
    for engine in ENGINES:
        alone = run_sweep(SweepSpace(**SPACE, engines=(engine,)), w)
        mine = both.rows[both.rows["engine"] == engine]
        assert both.n_configs == len(ENGINES) * alone.n_configs
        mine, theirs = (f.sort_values(KEY).reset_index(drop=True) for f in (mine, alone.rows))
        pd.testing.assert_frame_equal(mine, theirs)


@pytest.mark.slow
@settings(max_examples=8, deadline=None, derandomize=True)
@given(rate=st.floats(0.5, 40.0), ttft=st.floats(0.05, 2.0), tpot=st.floats(0.004, 0.08))
def test_the_best_of_three_engines_is_never_worse_than_the_best_of_one(
    rate: float, ttft: float, tpot: float
) -> None:
    w = workload(rate, ttft, tpot)
    best = plan(SweepSpace(**ALL), w, simulate_requests=0, explain=False).recommended
    singles = [plan(SweepSpace(**SPACE, engines=(e,)), w, simulate_requests=0,
                    explain=False).recommended for e in ENGINES]  # fmt: skip
    found = [r for r in singles if r is not None]
    assert (best is None) == (not found)
    if best is not None:
        assert all(best["cost_per_hour"] <= r["cost_per_hour"] for r in found)
        # and it is the cheapest of theirs, in the planner's own order (check.RANK)
        assert best == cheapest(pd.DataFrame(found))


def test_one_engine_plans_as_before() -> None:
    """The default is vLLM, stated once (SweepSpace), and naming it changes nothing; a plan of
    one engine is that engine's rows only, with the curves it always had."""
    w = workload(8.0)
    default = plan(SweepSpace(**SPACE), w, simulate_requests=300)
    named = plan(SweepSpace(**SPACE, engines=("vllm",)), w, simulate_requests=300)
    assert SweepSpace.default("engines") == ("vllm",)
    assert timeless(default) == timeless(named)
    assert set(default.sweep.rows["engine"]) == {"vllm"}
    assert [g.engine for g in default.sweep.curves] == ["vllm"] * len(default.sweep.curves)


@pytest.mark.parametrize("tp", [1, 8])
def test_each_engine_is_priced_as_rooflens_predict_prices_it(tp: int) -> None:
    """A decode step of one sequence (M = 1) in the planner's curves is `rooflens.predict`'s
    TPOT with the same engine: with 2 output tokens predict has one decode step, at KV length
    P + 1, which is the planner's mean KV length P + O/2. The engines differ by their GEMM and
    attention terms (`engines:` in hardware/calibration/h100-sxm.yaml) and, at TP 8, by their
    custom all-reduce (hardware/calibration/comm-custom-allreduce.yaml)."""
    space = SweepSpace(model="llama-3-8b", gpus=("h100-sxm",), tp=(tp,), weight_dtypes=("bf16",),
                       kv_dtypes=("bf16",), max_gpus=8, engines=ENGINES)  # fmt: skip
    result = run_sweep(space, workload(1.0, output="2"))
    assert TOKEN_GRID[0] == 1.0
    planned, predicted, all_reduce = {}, {}, {}
    for group, curves in result.curves.items():
        p = rooflens.predict("llama-3-8b", "h100-sxm", tp=tp, batch=1, prompt_len=800,
                             output_len=2, weight_dtype="bf16", kv_dtype="bf16",
                             profile="calibrated", engine=group.engine,
                             prefill_chunk=2048)  # fmt: skip
        planned[group.engine], predicted[group.engine] = float(curves.decode_s[0]), p.tpot_s
        all_reduce[group.engine] = sum(float(np.sum(r.total_s)) for r in p.decode.priced
                                       if r.op.name == "tp.all_reduce")  # fmt: skip
    assert planned == pytest.approx(predicted, rel=1e-9)
    assert len(set(planned.values())) == len(ENGINES)  # each engine's kernels, its own price
    if tp == 8:  # and each its own custom all-reduce
        assert len(set(all_reduce.values())) == len(ENGINES)


def test_the_recommended_engine_meets_the_slos_in_rooflens_predict() -> None:
    w = workload(6.0, ttft=0.5, tpot=0.03)
    r = plan(SweepSpace(**ALL), w, simulate_requests=0).recommended
    assert r is not None and r["engine"] in ENGINES
    common = dict(prompt_len=800, output_len=200, weight_dtype=r["weight_dtype"],
                  act_dtype=r["act_dtype"], kv_dtype=r["kv_dtype"], tp=r["tp"],
                  profile="calibrated", engine=r["engine"], prefill_chunk=2048)  # fmt: skip
    assert rooflens.predict("llama-3-8b", r["gpu"], batch=1, **common).ttft_s <= 0.5
    full = rooflens.predict("llama-3-8b", r["gpu"], batch=r["batch"], **common)
    assert full.tpot_s <= r["tpot_p99_s"] <= 0.03


def test_ties_between_engines_keep_the_order_of_engines() -> None:
    """Under `ideal` every engine prices alike: the order engines are given in changes nothing,
    the tie goes to the first of ENGINES, and a note says why."""
    w = workload(8.0)
    plans = [plan(SweepSpace(**SPACE, engines=order, profile="ideal"), w, simulate_requests=300)
             for order in (ENGINES, tuple(reversed(ENGINES)))]  # fmt: skip
    a, b = (timeless(p) for p in plans)
    assert a == b
    assert a["recommended"]["engine"] == ENGINES[0]
    assert all(row["engine"] == ENGINES[0] for row in a["pareto"])  # exact copies: the first
    assert any("ideal prices every engine alike" in note for note in a["notes"])
    rows = plans[0].sweep.rows
    same = rows.groupby("engine")[RANK].apply(lambda f: f.sort_values(RANK).to_numpy().tolist())
    assert same[ENGINES[0]] == same[ENGINES[1]] == same[ENGINES[2]]  # priced alike


def test_mixed_pairs_join_one_engine() -> None:
    space = SweepSpace(model="llama-3-8b", gpus=("h100-sxm", "l40s"), tp=(1,), max_gpus=4,
                       weight_dtypes=("fp8",), kv_dtypes=("fp8",), engines=("vllm", "trtllm"),
                       prefill_gpus=("h100-sxm",), decode_gpus=("l40s",))  # fmt: skip
    result = run_sweep(space, workload(2.0))
    found = pairs(space, result.curves)
    assert len(found) == 2 and all(cp.group.engine == cd.group.engine for cp, cd in found)


def test_engine_options_and_their_errors() -> None:
    common = dict(model="llama-3-8b", gpus="h100-sxm", rate=1.0)
    assert build_request(**common, engine="all")[0].engines == ENGINES
    assert build_request(**common, engine="trtllm, vllm")[0].engines == ("vllm", "trtllm")
    for text in ("foo", "vllm,,x", "", "vllm,foo"):
        with pytest.raises(RooflensError) as err:
            build_request(**common, engine=text)
        assert err.value.field == "engine" and "vllm, sglang, trtllm" in str(err.value)
        assert "\n" not in str(err.value)


def test_a_serving_profile_is_one_engines(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "vllm.yaml"
    path.write_text("kind: rooflens-serving-profile\nengine: vllm\nmodel: llama-3-8b\n"
                    "gpu: h100-sxm\nmode: chunked\nstep_overhead_s: 0.001\nmax_batch: 64\n"
                    "measured_mean_concurrency: 10\n")  # fmt: skip
    common = dict(model="llama-3-8b", gpus="h100-sxm", rate=1.0, serving_profile=str(path))
    assert build_request(**common)[0].step_overhead_s == 0.001
    with pytest.raises(RooflensError, match="--engine vllm"):
        build_request(**common, engine="vllm,sglang")


def test_every_listing_names_the_engine(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    csv = tmp_path / "plan.csv"
    argv = ["plan", "--model", "llama-3-8b", "--gpus", "h100-sxm", "--tp", "1,8", "--rate", "8",
            "--ttft-slo", "1", "--tpot-slo", "0.05", "--sim-requests", "300",
            "--engine", "all"]  # fmt: skip
    assert cli.main([*argv, "--json", "--csv", str(csv)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["space"]["engines"] == list(ENGINES)
    assert out["recommended"]["engine"] in ENGINES
    assert all(p["engine"] in ENGINES for p in out["pareto"])
    assert all(s["config"]["engine"] in ENGINES for s in out["simulations"])
    assert set(pd.read_csv(csv)["engine"]) == set(ENGINES)
    names = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
    assert f"on {names[out['recommended']['engine']]}," in out["explanation"][0]
    assert cli.main([*argv, "--md"]) == 0
    table = capsys.readouterr().out
    lines = table.splitlines()
    start = next(i for i, line in enumerate(lines) if "| gpu |" in line)
    column = [c.strip() for c in lines[start].split("|")].index("engine")
    rows = lines[start + 2 : lines.index("", start)]  # below the header and its rule
    assert rows and all(row.split("|")[column].strip() in ENGINES for row in rows)


@pytest.mark.parametrize(
    ("engines", "profile", "said"),
    [("vllm", "calibrated", "(calibrated profile, vLLM kernels)"),
     ("all", "calibrated", "(calibrated profile, each configuration with its engine's kernels "
                           "(vLLM, SGLang, TensorRT-LLM))"),
     ("all", "ideal", "(ideal profile (datasheet lower bound))")],
)  # fmt: skip
def test_the_plan_header_names_its_profile_and_engines(capsys, engines, profile, said) -> None:  # type: ignore[no-untyped-def]
    # issue 23 §5: every table says which profile and which engine produced its numbers
    argv = ["plan", "--model", "llama-3-8b", "--gpus", "h100-sxm", "--rate", "4", "--ttft-slo",
            "1", "--tpot-slo", "0.05", "--sim-requests", "0", "--engine", engines, "--profile",
            profile]  # fmt: skip
    assert cli.main(argv) == 0
    header = " ".join(capsys.readouterr().out.split())  # the terminal wraps it
    assert header.startswith("Capacity plan: llama-3-8b") and said in header
