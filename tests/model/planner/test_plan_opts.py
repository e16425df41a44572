"""Step-structure optimizations and expert parallelism in the planner, against the scalar path
(`model.api.run`, what `rooflens predict` runs): the curves, the memory cap, the recommendation
re-checked, and EP's GPU count, memory per GPU and step time."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.model.optimizations import parse_opt
from rooflens.model.planner.curves import Curves, Group, build_curves
from rooflens.model.planner.plan import plan
from rooflens.model.planner.serving import LengthStats, chunked, colocated
from rooflens.model.planner.sim import simulate
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.step_costs import CurveCosts
from rooflens.model.planner.sweep import run_sweep
from rooflens.model.planner.workload import SLO, LengthDist, ServingWorkload
from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.specs.presets import get_model

SPEC = "speculative:draft=llama-3-8b,gamma=4,alpha=0.8"
OPTS = [SPEC, "medusa:heads=4,alpha=0.6", "lookahead", "early-exit:mean_layers=0.6",
        "prompt-compression:ratio=4,compressor=llama-3-8b", "offload:fraction=0.05"]  # fmt: skip
W = ServingWorkload(rate_per_s=1.0, prompt=LengthDist.parse("800"),
                    output=LengthDist.parse("200"))  # fmt: skip
OVERHEAD = 1.5 * 2**30


def curves(model: str, group: Group, opts: tuple[str, ...] = ()) -> Curves:
    parsed = [parse_opt(o) for o in opts]
    return build_curves(get_model(model), group, W, parsed, profile="calibrated",
                        chunk_tokens=2048, overhead_bytes=OVERHEAD)  # fmt: skip


def scenario(model: str, gpu: str, batch: int = 1, **kw: object):  # type: ignore[no-untyped-def]
    return make_scenario(model, gpu, batch=batch, prompt_len=800, output_len=200,
                         profile="calibrated", prefill_chunk=2048, **kw)  # fmt: skip


@pytest.mark.parametrize("opt", OPTS)
def test_curves_with_step_structure_opts_match_predict(opt: str) -> None:
    """TPOT at B = 1, 8, 64 and TTFT of one prompt: the planner's grid against run()."""
    c = curves("llama-3-70b", Group("h100-sxm", 4, 1, 1, "bf16", "bf16", "bf16", (opt,)), (opt,))
    plain = curves("llama-3-70b", Group("h100-sxm", 4, 1, 1, "bf16", "bf16", "bf16"))
    for batch in (1, 8, 64):
        expected = run(scenario("llama-3-70b", "h100-sxm", batch, tp=4), [opt])
        assert np.interp(batch, c.tokens, c.decode_s) == pytest.approx(expected.tpot_s, rel=0.01)
    single = run(scenario("llama-3-70b", "h100-sxm", 1, tp=4), [opt])
    assert c.prefill_s[0] == pytest.approx(single.ttft_s, rel=0.01)
    assert c.max_batch_memory == make_pipeline(scenario("llama-3-70b", "h100-sxm", tp=4),
                                               [opt]).memory().max_batch  # fmt: skip
    changed = not np.allclose(c.decode_s, plain.decode_s) or c.prefill_s[0] != plain.prefill_s[0]
    assert changed  # and the optimization does move the planner's numbers


def test_speculative_recommendation_meets_its_slos_in_predict() -> None:
    w = W.model_copy(update={"slo": SLO(ttft_p99_s=1.0, tpot_p99_s=0.012)})
    space = SweepSpace(model="llama-3-70b", gpus=("h100-sxm", "a100-sxm-80gb"), tp=(2, 4, 8),
                       kv_dtypes=("bf16",), max_gpus=16)  # fmt: skip
    without = plan(space, w, simulate_requests=0, explain=False).recommended
    p = plan(space.model_copy(update={"sweep_opts": (SPEC,)}), w, simulate_requests=400)
    r = p.recommended
    assert r is not None and r["opts"] == SPEC and p.verified
    assert without is None or r["cost_per_hour"] < without["cost_per_hour"]
    common = dict(weight_dtype=r["weight_dtype"], act_dtype=r["act_dtype"],
                  kv_dtype=r["kv_dtype"], tp=r["tp"])  # fmt: skip
    alone = run(scenario("llama-3-70b", r["gpu"], 1, **common), [SPEC])
    full = run(scenario("llama-3-70b", r["gpu"], r["batch"], **common), [SPEC])
    assert alone.ttft_s <= w.slo.ttft_p99_s and full.tpot_s <= w.slo.tpot_p99_s
    assert full.memory.fits and r["tpot_p99_s"] >= full.tpot_s * 0.99


def test_disaggregated_tpot_is_predicts_at_the_running_batch() -> None:
    """Decode replicas run no prefill: mean TPOT = predict's TPOT at the mean running batch,
    p99 TPOT = predict's at the batch cap (within 1 %)."""
    w = W.model_copy(update={"rate_per_s": 3.0, "slo": SLO(tpot_p99_s=0.05)})
    space = SweepSpace(model="llama-3-70b", gpus=("h100-sxm",), tp=(4,), weight_dtypes=("bf16",),
                       kv_dtypes=("bf16",), modes=("disaggregated",), opts=(SPEC,),
                       max_gpus=8)  # fmt: skip
    r = plan(space, w, simulate_requests=0, explain=False).recommended
    assert r is not None
    lo, hi = int(np.floor(r["mean_batch"])), int(np.ceil(r["mean_batch"]))
    at = [run(scenario("llama-3-70b", "h100-sxm", max(b, 1), tp=4), [SPEC]).tpot_s
          for b in (lo, hi)]  # fmt: skip
    assert r["tpot_s"] == pytest.approx(np.interp(r["mean_batch"], [lo, hi + 1e-9], at), rel=0.02)
    cap = run(scenario("llama-3-70b", "h100-sxm", r["batch"], tp=4), [SPEC]).tpot_s
    assert r["tpot_p99_s"] == pytest.approx(cap, rel=0.01)


@pytest.mark.parametrize("mode", ["colocated", "chunked"])
def test_simulation_with_speculative_steps_agrees_with_the_steady_state(mode: str) -> None:
    c = curves("llama-3-70b", Group("h100-sxm", 4, 1, 1, "bf16", "bf16", "bf16", (SPEC,)), (SPEC,))
    assert c.tokens_per_step == pytest.approx(3.3616) and c.rows_per_sequence == 5
    n, rate = 2000, 3.0
    rng = np.random.default_rng(0)
    arrivals = np.cumsum(rng.exponential(1 / rate, n))
    P, O = np.full(n, 800.0), np.full(n, 200.0)
    sim = simulate(CurveCosts(c), mode, arrivals, P, O, 256)
    L, r, cap = LengthStats.of(W), np.array([rate]), np.array([256.0])
    m = colocated(c, L, r, cap) if mode == "colocated" else chunked(c, L, r, cap, 2048)
    assert sim.tpot_mean_s == pytest.approx(m.tpot_mean_s[0], rel=0.05)
    assert sim.mean_batch == pytest.approx(rate * 199 * sim.tpot_mean_s, rel=0.05)  # Little


def test_prompt_compression_shortens_prefill_and_kv() -> None:
    base = curves("llama-3-8b", Group("h100-sxm", 1, 1, 1, "bf16", "bf16", "bf16"))
    opt = ("prompt-compression:ratio=4",)
    c = curves("llama-3-8b", Group("h100-sxm", 1, 1, 1, "bf16", "bf16", "bf16", opt), opt)
    assert c.prompt_points[0] == 200 and c.kv_len_mean == base.kv_len_mean - 600
    assert c.prefill_s[0] < base.prefill_s[0] and c.max_batch_memory > base.max_batch_memory


@pytest.mark.parametrize(
    ("model", "gpu", "tp", "ep", "dtype"),
    [("mixtral-8x7b", "h100-sxm", 1, 4, "bf16"), ("mixtral-8x7b", "h100-sxm", 2, 8, "bf16"),
     ("deepseek-v3", "h200", 8, 16, "fp8")],
)  # fmt: skip
def test_expert_parallel_curves_match_the_single_config_path(
    model: str, gpu: str, tp: int, ep: int, dtype: str
) -> None:
    ep_group = Group(gpu, tp, 1, ep, dtype, "bf16", "bf16")
    tp_group = Group(gpu, tp, 1, 1, dtype, "bf16", "bf16")
    with_ep, without = curves(model, ep_group), curves(model, tp_group)
    assert ep_group.gpus_per_replica == ep and ep_group.attention_groups == ep // tp
    sc = scenario(model, gpu, 16, tp=tp, ep=ep, weight_dtype=dtype, act_dtype="bf16")
    assert with_ep.weights_bytes == make_pipeline(sc).memory().weights_bytes
    assert with_ep.max_batch_memory == make_pipeline(sc).memory().max_batch
    assert np.interp(16, with_ep.tokens, with_ep.decode_s) == pytest.approx(run(sc).tpot_s,
                                                                            rel=0.01)  # fmt: skip
    # EP holds E/ep experts per GPU instead of E/tp slices, and moves tokens by all-to-all
    assert with_ep.weights_bytes < without.weights_bytes
    assert not np.allclose(with_ep.decode_s, without.decode_s)


def test_expert_parallel_sweep_counts_every_gpu_and_splits_the_load() -> None:
    w = W.model_copy(update={"rate_per_s": 8.0, "slo": SLO(ttft_p99_s=2.0, tpot_p99_s=0.05)})
    space = SweepSpace(model="mixtral-8x7b", gpus=("h100-sxm",), tp=(1, 2), ep=(1, 2, 4),
                       weight_dtypes=("bf16",), kv_dtypes=("bf16",), max_gpus=16)  # fmt: skip
    result = run_sweep(space, w)
    groups = {(g.tp, g.ep) for g in result.curves}
    assert groups == {(1, 1), (2, 1), (1, 2), (1, 4), (2, 2), (2, 4)}  # ep a multiple of tp
    rows = result.rows
    for r in rows[rows["ep"] > 1].to_dict("records"):
        per_replica = max(r["tp"], r["ep"])
        assert r["n_gpus"] == r["replicas"] * per_replica
        assert r["tokens_per_s_per_gpu"] == pytest.approx(r["output_tokens_per_s"] / r["n_gpus"])
        if r["mode"] == "disaggregated":  # Little per attention group: rate / (replicas·ep/tp)
            lam = w.rate_per_s / (r["decode_replicas"] * r["ep"] // r["tp"])
            assert r["mean_batch"] == pytest.approx(lam * 200 * r["tpot_s"], rel=2e-3)
    assert (rows["ep"] > 1).any()


def test_expert_parallelism_on_a_dense_model_is_noted() -> None:
    space = SweepSpace(model="llama-3-8b", gpus=("h100-sxm",), tp=(1,), ep=(1, 2), max_gpus=4)
    result = run_sweep(space, W)
    assert {g.ep for g in result.curves} == {1}
    assert any("dense" in note for note in result.notes)
