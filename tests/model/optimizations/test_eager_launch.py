"""`eager-launch`: each step costs max(device, launches × per-launch host time), the excess a
`host` row of its own. Checked against the closed form from the operator table's structure,
against the prediction without it, on a grid against one batch at a time, and against the
`validate e2e` route (validate/e2e/predict.py), which counts launches with the same function."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations import parse_opt
from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.steps import Step, StepTiming
from rooflens.model.pricing.host import EAGER_LAUNCH_S, HOST_OP, step_launches
from rooflens.model.pricing.roofline import step_time_s
from rooflens.validate.e2e.predict import RunSetup, predict_phase


def llama(batch: int = 1, **kw):  # type: ignore[no-untyped-def]
    return make_scenario("llama-3-8b", "h100-sxm", batch=batch, prompt_len=512, output_len=16,
                         **kw)  # fmt: skip


def host_rows(priced):  # type: ignore[no-untyped-def]
    return [p for p in priced if p.op.kind == HOST_OP]


def test_llama_3_8b_batch_1_decode_issues_10_kernels_a_layer_and_its_combine_plus_3() -> None:
    # 9 operator rows a layer + the paged cache's K/V write = 10 kernels, + the split-KV
    # combine where the cheaper of the split and unsplit grids splits (at 513 cached tokens on
    # vLLM's own FA3 terms it does not: 5 blocks of keys); embedding, final norm, lm_head = 3.
    pipe = make_pipeline(llama())
    decode = pipe.price_step(Step("decode", 1.0, 1.0, pipe.decode_kv_lens()))
    attention = next(p.op for p in decode if p.op.kind == "attention")
    combine = np.asarray(attention.shape["kernels"]) - 1.0
    assert set(np.unique(combine)) <= {0.0, 1.0}
    assert np.all(combine == (np.asarray(attention.shape["kv_splits"]) > 1))
    n = step_launches(p.op for p in decode)
    assert np.all(np.asarray(n) == (10 + combine) * 32 + 3)
    launches = int(np.max(n))
    device = step_time_s(decode)
    host = launches * EAGER_LAUNCH_S
    assert host == pytest.approx(launches * 7.5e-6)
    # at 7.5 µs the GPU's ~4.6 ms of weight reads hide the 2.4-2.7 ms of host time: unchanged
    assert np.all(device > host)
    plain, eager = run(llama()), run(llama(), ["eager-launch"])
    assert (eager.ttft_s, eager.tpot_s, eager.e2e_s) == (plain.ttft_s, plain.tpot_s, plain.e2e_s)
    assert not host_rows(eager.decode.priced)
    assert f"decode step issues {launches} kernels" in " ".join(eager.notes)
    assert "the GPU hides it" in eager.notes[-1]
    # a 25 µs host (a Python-heavy engine) is slower than the GPU at every step. On SGLang's
    # terms the split pays on the GPU at batch 1; host-bound, its 32 combine launches cost the
    # host 0.8 ms and save the GPU less, so the step runs it unsplit (model/pricing/host.py
    # unsplit_if_host_bound): TPOT is the host's 323 × 25 µs, and the host row carries the
    # excess over the unsplit GPU step
    sglang = llama(engine="sglang")
    split = run(sglang)
    slow = run(sglang, ["eager-launch:per_launch_us=25"])
    unsplit = run(sglang, ["unsplit-decode"])
    assert split.tpot_s < unsplit.tpot_s < 323 * 25e-6
    assert slow.tpot_s == pytest.approx(323 * 25e-6, rel=1e-12)
    (row,) = host_rows(slow.decode.priced)
    assert row.bound == "host"
    assert float(np.mean(row.total_s)) == pytest.approx(323 * 25e-6 - unsplit.tpot_s, rel=1e-9)
    assert "decode step issues 323 kernels" in slow.notes[-1]
    assert float(np.mean(step_time_s(slow.decode.priced))) == pytest.approx(slow.tpot_s)
    assert "host-bound" in slow.notes[-1]
    assert slow.e2e_s == pytest.approx(slow.ttft_s + 15 * slow.tpot_s)


def test_a_1b_model_at_batch_1_is_host_bound_and_batch_256_prefill_is_not() -> None:
    sc = make_scenario("gemma-3-1b", "h100-sxm", batch=1, prompt_len=512, output_len=16)
    pred = run(sc, ["eager-launch"])
    # host-bound split or not; unsplit, its decode attention issues one launch fewer a layer,
    # so the step is the unsplit table's launches at 7.5 µs
    pipe = make_pipeline(sc, ["unsplit-decode"])
    decode = pipe.price_step(Step("decode", 1.0, 1.0, pipe.decode_kv_lens()))
    host = np.asarray(step_launches(p.op for p in decode)) * EAGER_LAUNCH_S
    assert np.all(host > step_time_s(decode))
    assert pred.tpot_s == pytest.approx(float(np.mean(host)), rel=1e-12)
    assert "host-bound" in pred.notes[-1]
    big = run(llama(256), ["eager-launch"])
    assert big.ttft_s == run(llama(256)).ttft_s  # 256 × 512 prompt tokens: ≫ 2.4 ms of GPU
    assert not host_rows(big.prefill.priced)


def test_per_launch_cost_only_ever_slows_a_step() -> None:
    tpots = [run(llama(), [f"eager-launch:per_launch_us={u}"]).tpot_s
             for u in (0.001, 1, 7.5, 13, 20, 100, 1000)]  # fmt: skip
    assert tpots == sorted(tpots)
    assert tpots[0] == run(llama()).tpot_s  # a free host: the graph-captured prediction
    assert tpots[-1] == pytest.approx(323 * 1e-3)  # host-bound: attention unsplit, 32 fewer


def test_grid_timing_equals_one_batch_at_a_time() -> None:
    # batches where split-KV decode splits (1) and does not (256): launches per grid point
    batches = np.array([1.0, 4.0, 256.0])
    text = "eager-launch:per_launch_us=25"
    pipe = make_pipeline(llama(), [text])
    sc = pipe.scenario
    B, kv = batches[:, None], pipe.decode_kv_lens()[None, :]
    decode = pipe.price_step(Step("decode", B, 1.0, kv))
    prefill = pipe.price_step(Step("prefill", batches, 512.0, 512.0))
    t = StepTiming(batch=B, kv_lens=kv, prefill_batch=batches, prompt_tokens=512.0,
                   prompt_tokens_in=512.0, prefill_priced=prefill,
                   prefill_s=step_time_s(prefill), decode_priced=decode,
                   decode_step_s=step_time_s(decode))  # fmt: skip
    out = pipe.opts[0].timing(t, sc, pipe)
    tpot = np.mean(np.broadcast_to(out.tpot_s, (3, kv.size)), axis=1)
    for i, b in enumerate(batches):
        pred = run(llama(int(b)), [text])
        assert tpot[i] == pytest.approx(pred.tpot_s, rel=1e-12)
        assert np.broadcast_to(out.prefill_s, (3,))[i] == pytest.approx(pred.ttft_s, rel=1e-12)
    assert not np.allclose(out.decode_step_s, t.decode_step_s)  # batch 1 is host-bound


def test_validate_e2e_and_the_optimization_price_the_same_eager_step() -> None:
    setup = RunSetup(llama().model, "h100-sxm", "calibrated", "bf16", 60e-6, True)
    e2e = predict_phase(setup, "decode", 1, 1024, graphed=False)
    sc = make_scenario("llama-3-8b", "h100-sxm", batch=1, prompt_len=1024, output_len=2,
                       profile="calibrated")  # fmt: skip
    pred = run(sc, ["eager-launch:per_launch_us=60"])
    (row,) = host_rows(pred.decode.priced)
    assert pred.tpot_s == pytest.approx(e2e.total_s, rel=1e-9)
    assert float(np.mean(row.total_s)) == pytest.approx(e2e.ops[HOST_OP], rel=1e-9)
    assert e2e.launches == step_launches(p.op for p in pred.decode.priced)


@pytest.mark.parametrize("value", ["0", "-1", "1001", "nan", "fast"])
def test_bad_per_launch_cost_is_one_clear_error(value: str) -> None:
    with pytest.raises(RooflensError, match="per_launch_us"):
        parse_opt(f"eager-launch:per_launch_us={value}")
