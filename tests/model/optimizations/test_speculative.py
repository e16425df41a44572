"""Speculative decoding (model/optimizations/speculative.py): Leviathan et al. 2023's closed
forms (anchors E10), the identity at γ = 0, and the roofline-priced speedup's batch behaviour."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations._drafting import expected_tokens, leviathan_speedup
from rooflens.model.optimizations.speculative import Speculative
from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.memory import kv_bytes_per_token, weights_bytes_per_gpu

TARGET, DRAFT, GPU = "llama-2-70b", "llama-2-7b", "h100-sxm"


def scenario(batch: int = 1, **kw: object):
    return make_scenario(TARGET, GPU, batch=batch, prompt_len=256, output_len=64, tp=4,
                         **{"profile": "ideal", **kw})  # fmt: skip


def spec(gamma: int = 4, alpha: float = 0.8) -> Speculative:
    return Speculative(draft=DRAFT, gamma=gamma, alpha=alpha)


@pytest.mark.parametrize(("alpha", "gamma"), [(0.8, 4), (0.6, 3), (0.9, 7), (0.0, 5), (1.0, 4)])
def test_expected_tokens_e10(alpha: float, gamma: int) -> None:
    # E10: (1 − α^(γ+1)) / (1 − α); second route: the sum Σ_{i=0..γ} α^i of P(≥ i+1 tokens).
    assert expected_tokens(alpha, gamma) == pytest.approx(sum(alpha**i for i in range(gamma + 1)))


def test_expected_tokens_against_simulation() -> None:
    # Third route: draw acceptances; each iteration keeps the accepted prefix plus one token.
    rng = np.random.default_rng(0)
    alpha, gamma = 0.7, 5
    accepted = rng.random((200_000, gamma)) < alpha
    prefix = np.where(accepted.all(axis=1), gamma, np.argmin(accepted, axis=1))
    assert np.mean(prefix + 1) == pytest.approx(expected_tokens(alpha, gamma), rel=0.01)


def test_leviathan_speedup_e10() -> None:
    # Leviathan et al. §3.5 example scale: α = 0.8, γ = 4, c = 0.05 -> 3.36 / 1.2 = 2.80.
    assert leviathan_speedup(0.8, 4, 0.05) == pytest.approx((1 - 0.8**5) / (0.2 * 1.2))
    assert leviathan_speedup(0.8, 0, 0.05) == pytest.approx(1.0)


def test_gamma_zero_is_rejected() -> None:
    # γ = 0 drafts nothing: a stack that names speculative decoding must use it (issue 15)
    with pytest.raises(RooflensError, match="gamma must be ≥ 1, got 0"):
        spec(gamma=0)


def test_priced_speedup_matches_e10_at_batch_1() -> None:
    # At batch 1 the target step is memory-bound, so verifying γ+1 tokens costs about one step
    # and the roofline's speedup is Leviathan's closed form with the priced cost ratio c.
    sc = scenario(batch=1)
    base = run(sc)
    pipeline = make_pipeline(sc, [spec()])
    draft = run(spec().draft_scenario(pipeline.scenario))
    c = draft.tpot_s / base.tpot_s
    fast = pipeline.predict()
    assert base.tpot_s / fast.tpot_s == pytest.approx(leviathan_speedup(0.8, 4, c), rel=0.03)


def test_speedup_falls_with_batch_and_drops_below_one() -> None:
    speedups = []
    for batch in (1, 8, 32, 128, 256):
        sc = scenario(batch=batch)
        speedups.append(run(sc).tpot_s / run(sc, [spec()]).tpot_s)
    assert all(a > b for a, b in itertools.pairwise(speedups)), speedups
    assert speedups[0] > 1.8
    assert speedups[-1] < 1.0


def test_both_models_are_in_memory() -> None:
    sc = scenario(batch=8)
    base, fast = run(sc).memory, run(sc, [spec(gamma=4)]).memory
    draft = spec().draft_scenario(sc)
    assert fast.extra_bytes - base.extra_bytes == pytest.approx(weights_bytes_per_gpu(draft))
    held = sc.context_tokens + 4  # both caches also hold the γ speculative positions
    per_token = kv_bytes_per_token(sc) + kv_bytes_per_token(draft)
    assert fast.kv_cache_bytes == pytest.approx(8 * held * per_token)
    assert fast.max_batch < base.max_batch


def test_draft_prefill_adds_to_ttft() -> None:
    sc = scenario(batch=2)
    draft_ttft = run(spec().draft_scenario(sc)).ttft_s
    assert run(sc, [spec()]).ttft_s == pytest.approx(run(sc).ttft_s + draft_ttft)


def test_default_draft_is_the_familys_smallest_preset() -> None:
    # no draft given: the smallest preset sharing the target's tokenizer (issue 15 item 1)
    target = make_scenario("llama-3.1-70b", "h100-sxm", tp=4)
    alone = run(target, [Speculative(gamma=4)])
    named = run(target, [Speculative(gamma=4, draft="llama-3.1-8b")])
    assert alone.tpot_s == named.tpot_s and "draft llama-3.1-8b" in alone.notes[-1]
    phi = make_scenario("phi-2", "h100-sxm")
    with pytest.raises(RooflensError, match="no preset shares phi-2's tokenizer"):
        run(phi, [Speculative(gamma=4)])


def test_bad_settings_are_one_line_errors() -> None:
    with pytest.raises(RooflensError, match="alpha"):
        Speculative(draft=DRAFT, alpha=1.5)
    with pytest.raises(RooflensError, match="unknown model"):
        run(scenario(), [Speculative(draft="llama-9b", gamma=2)])
