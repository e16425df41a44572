"""The planner's input checks (issue 16 §4-5): the up-front size estimate is the count the sweep
really prices, over-large sweeps and simulations are refused before any work, and the Python
route (what the dashboard calls) refuses what the CLI refuses."""

from __future__ import annotations

import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.planner.plan import plan
from rooflens.model.planner.plan_args import MAX_CONFIGS, build_request, estimated_configs
from rooflens.model.planner.sweep import run_sweep

REQUEST = dict(model="llama-3-8b", gpus="h100-sxm,a100-sxm-80gb", rate=4.0, prompt_len="512",
               output_len="128", tp="1,2", max_gpus=6, max_batch="8,64")  # fmt: skip


def test_the_estimate_is_the_count_the_sweep_prices() -> None:
    space, workload = build_request(**REQUEST)  # type: ignore[arg-type]
    assert estimated_configs(space) == run_sweep(space, workload).n_configs
    # by hand: 2 GPUs × 2 TP × 4 dtype pairs; R = 6 (TP1) or 3 (TP2) replicas; 2 caps;
    # colocated and chunked R each, disaggregated R(R−1)/2 splits
    per_tp = {6: 2 * (6 + 6 + 15), 3: 2 * (3 + 3 + 3)}
    assert estimated_configs(space) == 2 * 4 * (per_tp[6] + per_tp[3])


def test_a_sweep_too_big_is_refused_with_how_to_narrow_it() -> None:
    request = {**REQUEST, "gpus": "all", "tp": "1,2,4,8", "max_gpus": 512, "max_batch": None}
    with pytest.raises(RooflensError, match="narrow it") as info:
        build_request(**request)  # type: ignore[arg-type]
    count = int(str(info.value).split("about ")[1].split(" ")[0].replace(",", ""))
    assert count > MAX_CONFIGS


@pytest.mark.parametrize(("requests", "seed"), [(-5, 0), (100_000_000, 0), (10, -1)])
def test_the_python_route_refuses_what_the_cli_refuses(requests: int, seed: int) -> None:
    space, workload = build_request(**REQUEST)  # type: ignore[arg-type]
    with pytest.raises(RooflensError):
        plan(space, workload, simulate_requests=requests, seed=seed)


SPACE_DEFAULTS = ("tp", "pp", "ep", "weight_dtypes", "kv_dtypes", "max_batches", "modes",
                  "max_gpus", "chunk_tokens", "profile", "objective", "kv_offload")  # fmt: skip


def test_every_route_plans_with_the_sweep_spaces_defaults() -> None:
    # SweepSpace states the planner's defaults once; the Python route and the CLI's options
    # start from them (as the dashboard's planner form does)
    import rooflens.cli as cli
    from rooflens.model.planner.space import SweepSpace

    plain = SweepSpace(model="llama-3-8b", gpus=("h100-sxm",))
    space, _ = build_request(model="llama-3-8b", gpus="h100-sxm", rate=1.0)
    assert {n: getattr(space, n) for n in SPACE_DEFAULTS} == {
        n: getattr(plain, n) for n in SPACE_DEFAULTS
    }
    args = cli.build_parser().parse_args(["plan", "--model", "llama-3-8b", "--rate", "1"])
    via_cli, _ = build_request(model="llama-3-8b", gpus="h100-sxm", rate=1.0, tp=args.tp,
                               pp=args.pp, ep=args.ep, weight_dtypes=args.weight_dtypes,
                               kv_dtypes=args.kv_dtypes, modes=args.modes, max_gpus=args.max_gpus,
                               chunk=args.chunk, profile=args.profile, objective=args.objective,
                               kv_offload=args.kv_offload)  # fmt: skip
    assert via_cli == space
