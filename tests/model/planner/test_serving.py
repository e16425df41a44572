"""The serving model against second routes: the cost pipeline (model.api.run), the memory
module's max batch, Little's law, and monotonicity in load."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflens.model.planner.curves import Group, build_curves
from rooflens.model.planner.pareto import pareto_mask
from rooflens.model.planner.serving import (
    LengthStats,
    chunked,
    colocated,
    disaggregated,
    solve_concurrency,
)
from rooflens.model.planner.workload import LengthDist, ServingWorkload
from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.specs.presets import get_model

W = ServingWorkload(rate_per_s=4.0, prompt=LengthDist.parse("512"), output=LengthDist.parse("128"))
GROUP = Group("h100-sxm", 1, 1, 1, "bf16", "bf16", "bf16")
CURVES = build_curves(get_model("llama-3-8b"), GROUP, W, [], profile="calibrated",
                      chunk_tokens=2048, overhead_bytes=1.5 * 2**30)  # fmt: skip


@pytest.mark.parametrize("batch", [1, 7, 64, 300])
def test_decode_curve_matches_predict(batch: int) -> None:
    """Step time at B sequences and the mean KV length = predict's mean TPOT at batch B."""
    sc = make_scenario("llama-3-8b", "h100-sxm", batch=batch, prompt_len=512, output_len=128,
                       profile="calibrated")  # fmt: skip
    expected = run(sc).tpot_s
    got = float(np.interp(batch, CURVES.tokens, CURVES.decode_s))
    assert got == pytest.approx(expected, rel=0.01)


def test_prefill_curve_matches_predict() -> None:
    sc = make_scenario("llama-3-8b", "h100-sxm", batch=1, prompt_len=512, output_len=128,
                       profile="calibrated")  # fmt: skip
    assert CURVES.prefill_s[0] == pytest.approx(run(sc).ttft_s, rel=1e-9)


def test_memory_cap_matches_memory_module() -> None:
    sc = make_scenario("llama-3-8b", "h100-sxm", prompt_len=512, output_len=128,
                       prefill_chunk=2048, profile="calibrated")  # fmt: skip
    assert CURVES.max_batch_memory == make_pipeline(sc).memory().max_batch


def test_solve_concurrency_inverts_throughput() -> None:
    demand = np.array([10.0, 1e3, 1.5e4])  # below the compute-bound plateau (~19,700)
    m = solve_concurrency(CURVES.tokens, CURVES.decode_s, demand)
    assert m / np.interp(m, CURVES.tokens, CURVES.decode_s) == pytest.approx(demand, rel=1e-3)


@pytest.mark.parametrize("mode", ["colocated", "chunked", "disaggregated"])
def test_littles_law_holds(mode: str) -> None:
    """Sequences in decode = arrival rate × output tokens × time per output token."""
    L = LengthStats.of(W)
    rate, cap = np.array([2.0, 8.0, 20.0]), np.full(3, 512.0)
    m = {
        "colocated": lambda: colocated(CURVES, L, rate, cap),
        "chunked": lambda: chunked(CURVES, L, rate, cap, 2048),
        "disaggregated": lambda: disaggregated(CURVES, L, rate, rate, cap),
    }[mode]()
    assert m.stable.all()
    assert m.mean_batch == pytest.approx(rate * L.output_mean * m.tpot_mean_s, rel=2e-3)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.05, 60.0), min_size=2, max_size=6))
def test_latency_never_falls_as_load_rises(rates: list[float]) -> None:
    L = LengthStats.of(W)
    rate = np.sort(np.asarray(rates))
    cap = np.full(rate.size, 256.0)
    for m in (colocated(CURVES, L, rate, cap), chunked(CURVES, L, rate, cap, 2048),
              disaggregated(CURVES, L, rate, rate, cap)):  # fmt: skip
        ok = m.stable
        for series in (m.ttft_p99_s, m.tpot_mean_s, m.mean_batch):
            assert np.all(np.diff(series[ok]) >= -1e-12)
        # once unstable, stays unstable
        assert not np.any(np.diff(ok.astype(int)) > 0)


def test_pareto_mask_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 20, 300).astype(float), rng.integers(0, 20, 300).astype(float)
    mask = pareto_mask(x, y)
    for i in range(x.size):
        dominated = np.any((x >= x[i]) & (y >= y[i]) & ((x > x[i]) | (y > y[i])))
        twins = (x == x[i]) & (y == y[i])
        # on the frontier iff not dominated; exact duplicates are kept once
        assert mask[i] == (not dominated and i == np.flatnonzero(twins)[0]) or (
            not dominated and np.count_nonzero(twins & mask) == 1
        )


def test_neutral_optimization_is_the_identity() -> None:
    """An optimization whose hooks are all the identity leaves every curve unchanged."""
    from rooflens.model.optimizations.base import Optimization

    class Neutral(Optimization):
        name = ""  # not registered

    with_opt = build_curves(get_model("llama-3-8b"), GROUP, W, [Neutral()], profile="calibrated",
                            chunk_tokens=2048, overhead_bytes=1.5 * 2**30)  # fmt: skip
    for field in ("body_s", "decode_s", "decode_s_per_kv_token", "prefill_s", "prefill_extra_s",
                  "prefill_grid_s", "prompt_points", "prefill_grid_target_tokens"):  # fmt: skip
        assert np.array_equal(getattr(with_opt, field), getattr(CURVES, field))
    assert (with_opt.tokens_per_step, with_opt.rows_per_sequence) == (1.0, 1.0)
    assert with_opt.max_batch_memory == CURVES.max_batch_memory


@pytest.mark.parametrize("batch", [1, 2, 30])
def test_a_one_row_step_keeps_its_m1_path_outside_the_envelope(batch: int) -> None:
    # vLLM's FP8 GEMMs on the B300 pay their m = 1 path at one sequence (roofline.py
    # single_row_s): the curve at batch 1 is that step's own price, and the steps above it are
    # not lifted to it (predict's TPOT at each batch, a second route)
    group = Group("b300", 1, 1, 1, "fp8", "fp8", "bf16", engine="vllm")
    curves = build_curves(get_model("llama-3-8b"), group, W, [], profile="calibrated",
                          chunk_tokens=2048, overhead_bytes=1.5 * 2**30)  # fmt: skip
    sc = make_scenario("llama-3-8b", "b300", batch=batch, prompt_len=512, output_len=128,
                       weight_dtype="fp8", act_dtype="fp8", kv_dtype="bf16", engine="vllm",
                       profile="calibrated")  # fmt: skip
    got = float(np.interp(batch, curves.tokens, curves.decode_s))
    assert got == pytest.approx(run(sc).tpot_s, rel=0.01)
    assert curves.decode_s[0] > curves.decode_s[1] * 1.2  # the path: +1.7 ms on ~3 ms
    assert np.all(np.diff(curves.decode_s[1:]) >= 0)  # the envelope, from two rows on
