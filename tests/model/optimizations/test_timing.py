"""Step times on arrays (model/optimizations/_timing.py): a scalar prediction's timing holds its
own TTFT and decode steps (so `decode_tpot_s` without a hook gives its TPOT back, a second
route through the same numbers), τ tokens per step divide the time per token, and under
pipeline parallelism the hooks see one micro-batch."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rooflens.model.optimizations._timing import decode_tpot_s, scalar_timing
from rooflens.model.predict.api import make_pipeline, make_scenario


def _pipe(**fields):  # type: ignore[no-untyped-def]
    return make_pipeline(make_scenario("llama-3-8b", "h100-sxm", batch=8, output_len=33,
                                       **fields))  # fmt: skip


def test_a_scalar_timing_is_the_predictions_own() -> None:
    pipe = _pipe()
    pred = pipe.predict()
    t = scalar_timing(pred, pipe)
    assert t.prefill_s == pred.ttft_s and t.batch == 8.0
    assert np.array_equal(t.kv_lens, pipe.decode_kv_lens())
    assert decode_tpot_s(t, pipe) == pytest.approx(pred.tpot_s, rel=1e-12)


def test_tokens_per_step_divide_the_time_per_token() -> None:
    pipe = _pipe()
    t = scalar_timing(pipe.predict(), pipe)
    tau = replace(t, tokens_per_step=2.5)
    assert decode_tpot_s(tau, pipe) == pytest.approx(decode_tpot_s(t, pipe) / 2.5, rel=1e-12)
    assert np.allclose(tau.tpot_s, t.tpot_s / 2.5)


def test_one_output_token_still_has_a_decode_point() -> None:
    pipe = make_pipeline(make_scenario("llama-3-8b", "h100-sxm", output_len=1))
    t = scalar_timing(pipe.predict(), pipe)
    assert t.kv_lens.tolist() == [pipe.scenario.workload.prompt_len + 1.0]


def test_under_pipeline_parallelism_hooks_see_one_micro_batch() -> None:
    from rooflens.model.predict.pp_schedule import microbatches

    pipe = make_pipeline(make_scenario("llama-3-70b", "h100-sxm", batch=8, tp=2, pp=2))
    t = scalar_timing(pipe.predict(), pipe)
    m = microbatches(pipe)
    assert m > 1 and t.batch == 8.0 / m and t.prefill_batch == 8.0
