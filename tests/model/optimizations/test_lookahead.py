"""Lookahead decoding (model/optimizations/lookahead.py)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rooflens.model.optimizations.lookahead import Lookahead, lookahead_tokens
from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.steps import Step
from rooflens.model.pricing.roofline import step_time_s


def scenario(batch: int = 1):
    return make_scenario("llama-2-7b", "a100-sxm-80gb", batch=batch, prompt_len=256, output_len=64)


def brute_force_tokens(alpha: float, ngram: int, guesses: int) -> float:
    """E[1 + longest accepted prefix over G candidates] by enumerating every outcome."""
    n = ngram - 1
    total = 0.0
    for outcome in itertools.product([True, False], repeat=n * guesses):
        p = np.prod([alpha if ok else 1 - alpha for ok in outcome])
        best = 0
        for g in range(guesses):
            run_ = outcome[g * n : (g + 1) * n]
            best = max(best, next((i for i, ok in enumerate(run_) if not ok), n))
        total += p * (1 + best)
    return total


@pytest.mark.parametrize(("alpha", "ngram", "guesses"), [(0.3, 3, 2), (0.5, 4, 3), (0.2, 5, 2)])
def test_tokens_per_step_by_enumeration(alpha: float, ngram: int, guesses: int) -> None:
    assert lookahead_tokens(alpha, ngram, guesses) == pytest.approx(
        brute_force_tokens(alpha, ngram, guesses)
    )


def test_one_gram_is_the_identity() -> None:
    sc = scenario(batch=4)
    assert run(sc, [Lookahead(ngram=1)]).to_dict() == run(sc).to_dict()


def test_step_width_and_price() -> None:
    opt = Lookahead(ngram=4, window=5, guesses=3, alpha=0.3)
    assert opt.width == 1 + (5 + 3) * 3
    pipeline = make_pipeline(scenario(), [opt])
    L = pipeline.decode_kv_lens()
    step = step_time_s(pipeline.price_step(Step("verify", 1.0, 25.0, L + 24.0, 25.0)))
    tau = lookahead_tokens(0.3, 4, 3)
    assert pipeline.predict().tpot_s == pytest.approx(float(np.mean(step)) / tau)


def test_gain_at_batch_1_vanishes_with_batch() -> None:
    gains = [run(scenario(b)).tpot_s / run(scenario(b), [Lookahead()]).tpot_s for b in (1, 64)]
    assert gains[0] > 1.5
    assert gains[1] < 1.0
