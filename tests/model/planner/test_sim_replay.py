"""`replay`: per-request outcomes, closed-loop clients and inter-token gaps, against closed
forms on a replica whose costs are known exactly."""

from __future__ import annotations

import numpy as np
import pytest
from test_sim import Linear

from rooflens.model.planner.sim import replay, simulate


def test_one_client_at_a_time_waits_for_nothing() -> None:
    # All n sent at t = 0 but at most one in flight: each is sent when the previous one ends,
    # so every TTFT is one prefill S (counted from the send) and the run takes n·S.
    n, S = 50, 0.2
    tr = replay(Linear(const=S), "colocated", np.zeros(n), np.ones(n), np.ones(n), 10**6,
                concurrency=1)  # fmt: skip
    assert tr.ttft_s == pytest.approx(np.full(n, S))
    assert tr.finish_s.max() == pytest.approx(n * S)


def test_open_loop_burst_queues_fcfs() -> None:
    # the same burst without a client limit: the k-th request waits for k − 1 prefills
    n, S = 50, 0.2
    tr = replay(Linear(const=S), "colocated", np.zeros(n), np.ones(n), np.ones(n), 10**6)
    assert tr.ttft_s == pytest.approx(S * np.arange(1, n + 1))


@pytest.mark.parametrize("clients", [2, 5])
def test_closed_loop_decode_throughput(clients: int) -> None:
    # Decode-only work (prefill 0) of O tokens at τ per step and no batch limit: C clients keep
    # C sequences running, so n requests take (n / C)·(O − 1)·τ and TPOT is τ.
    n, O, tau = 40, 11.0, 0.01
    tr = replay(Linear(tau=tau), "colocated", np.zeros(n), np.ones(n), np.full(n, O), 10**6,
                concurrency=clients)  # fmt: skip
    assert tr.finish_s.max() == pytest.approx(n / clients * (O - 1) * tau)
    assert tr.tpot_s(np.full(n, O)) == pytest.approx(np.full(n, tau))
    assert tr.batch_area / tr.span_s == pytest.approx(clients)


def test_inter_token_gaps_include_prefill_stalls() -> None:
    # Two requests: A runs alone, B arrives mid-decode and its prefill S stalls A once.
    S, tau = 0.5, 0.01
    arrival = np.array([0.0, 0.2])
    tr = replay(Linear(const=S, tau=tau), "colocated", arrival, np.ones(2), np.full(2, 60.0), 8)
    gaps = np.repeat(tr.itl_gap_s, tr.itl_tokens.astype(int))
    # 2 × 59 decode gaps in all; exactly one of them holds the stall
    assert gaps.size == 118
    assert np.count_nonzero(gaps > S) == 1 and gaps.max() == pytest.approx(S + tau)


def test_simulate_is_replay_summarised() -> None:
    rng = np.random.default_rng(3)
    arrival = np.cumsum(rng.exponential(0.1, 300))
    P, O = np.full(300, 10.0), rng.integers(2, 30, 300).astype(float)
    costs = Linear(const=0.02, per_token=0.001, tau=0.005)
    s = simulate(costs, "chunked", arrival, P, O, 16, warmup=0.0)
    tr = replay(costs, "chunked", arrival, P, O, 16)
    assert s.ttft_p99_s == pytest.approx(np.percentile(tr.ttft_s, 99))
    assert s.tpot_mean_s == pytest.approx(np.nanmean(tr.tpot_s(O)))
