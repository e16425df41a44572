"""The prediction's data types (model/predict/steps.py): which decode steps are priced (closed
form, and the sampled mean against the exact one), the memory breakdown's sums, and what a
prediction derives from its figures."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.scenario import Workload
from rooflens.model.predict.steps import (
    MAX_DECODE_SAMPLES,
    MemoryBreakdown,
    Step,
    decode_kv_lens,
    with_updates,
)
from rooflens.model.pricing.roofline import step_time_s


def test_decode_steps_attend_over_the_prompt_plus_the_tokens_so_far() -> None:
    # token i+1 (i = 1..O−1) attends over P + i positions; the first token is the prefill's
    w = Workload(batch=1, prompt_len=100, output_len=5)
    assert decode_kv_lens(w).tolist() == [101.0, 102.0, 103.0, 104.0]
    assert decode_kv_lens(Workload(batch=1, prompt_len=100, output_len=1)).size == 0


def test_sampled_decode_steps_keep_the_ends_and_the_mean() -> None:
    O = 3 * MAX_DECODE_SAMPLES
    w = Workload(batch=1, prompt_len=1000, output_len=O)
    kv = decode_kv_lens(w)
    assert kv.size == MAX_DECODE_SAMPLES
    assert (kv[0], kv[-1]) == (1001.0, 1000.0 + O - 1)
    # evenly spaced: the mean KV length equals the exact one, (P + 1 + P + O − 1) / 2
    assert kv.mean() == pytest.approx(1000 + O / 2, rel=1e-12)


def test_sampled_tpot_is_the_exact_mean_step_time() -> None:
    # every op's time is piecewise linear in L, so the sampled mean is within rounding of the
    # mean over every decode step, priced here one by one (the second route)
    sc = make_scenario("llama-3-8b", "h100-sxm", batch=4, prompt_len=256,
                       output_len=MAX_DECODE_SAMPLES + 300)  # fmt: skip
    pipe = make_pipeline(sc)
    every = np.arange(1, sc.workload.output_len, dtype=np.float64) + sc.workload.prompt_len
    exact = float(np.mean(step_time_s(pipe.price_step(Step("decode", 4.0, 1.0, every)))))
    assert pipe.predict().tpot_s == pytest.approx(exact, rel=1e-3)


def test_memory_breakdown_totals_its_parts_and_fits_at_capacity() -> None:
    parts = dict(weights_bytes=10.0, kv_cache_bytes=5.0, kv_bytes_per_token=1.0,
                 activation_bytes=2.0, overhead_bytes=1.0, extra_bytes=2.0)  # fmt: skip
    mem = MemoryBreakdown(**parts, capacity_bytes=20.0, max_batch=3)
    assert mem.total_bytes == 20.0 and mem.fits  # at capacity exactly still fits
    assert not MemoryBreakdown(**parts, capacity_bytes=19.9, max_batch=0).fits
    frame = mem.to_frame().set_index("part")["bytes"]
    assert frame["total"] == frame.drop(["total", "capacity"]).sum()
    assert mem.to_dict()["total_bytes"] == 20.0


def test_a_prediction_derives_throughput_from_its_times() -> None:
    pred = run(make_scenario("llama-3-8b", "a100-sxm-80gb", batch=8, output_len=64))
    w = pred.scenario.workload
    assert pred.output_tokens_per_s == pytest.approx(w.batch * w.output_len / pred.e2e_s)
    assert pred.e2e_per_output_token_s == pytest.approx(pred.e2e_s / w.output_len)


def test_new_times_drop_a_stale_timing() -> None:
    pred = run(make_scenario("llama-3-8b", "a100-sxm-80gb"))
    kept = with_updates(pred, notes=["x"])
    assert kept.timing is pred.timing and kept.notes == ["x"]
    assert with_updates(pred, tpot_s=1.0).timing is None
