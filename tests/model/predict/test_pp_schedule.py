"""Pipeline parallelism (model/predict/pp_schedule.py, `pp.send_recv` in model/ops/table.py,
`--opt pp-microbatches`): GPipe's schedule as closed forms over priced passes."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.model.optimizations.pp_microbatches import PPMicrobatches
from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.memory import weights_bytes_per_gpu
from rooflens.model.predict.pp_schedule import stage_times
from rooflens.model.predict.steps import Step
from rooflens.model.pricing.comm import send_recv_s
from rooflens.model.pricing.roofline import step_time_s

KW = {"prompt_len": 512, "output_len": 64, "profile": "ideal"}


def sc(batch: int = 8, pp: int = 2, tp: int = 1, **kw: object):
    return make_scenario("llama-2-13b", "a100-sxm-80gb", batch=batch, pp=pp, tp=tp, **KW, **kw)


def pass_and_hop(pipeline, step):
    priced = pipeline.price_step(step)
    hop = sum(p.total_s for p in priced if p.op.name == "pp.send_recv")
    return step_time_s(priced) - hop, hop / (pipeline.scenario.parallel.pp - 1)


def test_send_recv_carries_the_activations_between_stages() -> None:
    s = sc(batch=4, pp=4)
    ops = make_pipeline(s).step_ops(Step("prefill", 4.0, 512.0, 512.0))
    send = next(o for o in ops if o.name == "pp.send_recv")
    assert send.count == 3
    assert send.comm_bytes == 4 * 512 * 5120 * 2  # B·T·D at bf16
    plain = make_pipeline(sc(pp=1)).step_ops(Step("decode", 4.0, 1.0, 600.0))
    assert "pp.send_recv" not in [o.name for o in plain]


@pytest.mark.parametrize(("batch", "m"), [(8, 1), (8, 2), (8, 4), (16, 8)])
def test_gpipe_schedule(batch: int, m: int) -> None:
    s = sc(batch=batch, pp=4)
    pipeline = make_pipeline(s, [PPMicrobatches(n=m)])
    pred = pipeline.predict()
    t, h = pass_and_hop(pipeline, Step("prefill", batch / m, 512.0, 512.0))
    # GPipe: (m + pp − 1) stage slots of t/pp + h, the first pass paying pp − 1 sends.
    assert pred.ttft_s == pytest.approx(float(t + 3 * h + (m - 1) * (t / 4 + h)))
    L = pipeline.decode_kv_lens()
    t, h = pass_and_hop(pipeline, Step("decode", batch / m, 1.0, L))
    h = np.broadcast_to(h, t.shape)
    cycle = [max(a + 3 * b, m * (a / 4 + b)) for a, b in zip(t, h, strict=True)]
    assert pred.tpot_s == pytest.approx(sum(cycle) / len(cycle))
    assert pred.e2e_s == pytest.approx(pred.ttft_s + 63 * pred.tpot_s)


def test_one_micro_batch_is_the_plain_pass_plus_sends() -> None:
    # PP adds capacity, not speed: with one micro-batch a token crosses every stage in turn.
    single, staged = run(sc(pp=1)), run(sc(pp=2), [PPMicrobatches(n=1)])
    send = float(send_recv_s(8 * 5120 * 2.0, single.scenario.system))
    assert staged.tpot_s == pytest.approx(single.tpot_s + send, rel=1e-9)
    assert staged.ttft_s > single.ttft_s


def test_micro_batches_shrink_the_prefill_bubble() -> None:
    ttft = [run(sc(batch=16, pp=4), [PPMicrobatches(n=m)]).ttft_s for m in (1, 2, 4, 8)]
    assert ttft[0] > ttft[1] > ttft[2] > ttft[3]
    t1, t_inf = ttft[0], ttft[0] / 4  # all stages busy, no bubble
    assert ttft[3] == pytest.approx(t_inf * (8 + 3) / 8, rel=0.05)  # bubble (pp−1)/(m+pp−1)
    assert t1 > t_inf


def test_stage_times_closed_form() -> None:
    through, cycle = stage_times(8.0, 0.5, 4, 4)
    assert through == pytest.approx(8 + 1.5 + 3 * (2 + 0.5))
    assert cycle == pytest.approx(max(9.5, 4 * 2.5))


def test_default_micro_batches_is_the_identity_setting() -> None:
    s = sc(batch=8, pp=2)
    assert run(s, [PPMicrobatches(n=0)]).to_dict() == run(s).to_dict()
    assert run(s, [PPMicrobatches(n=2)]).to_dict() == run(s).to_dict()  # min(pp, B) = 2


def test_weights_split_by_stage() -> None:
    one, four = weights_bytes_per_gpu(sc(pp=1)), weights_bytes_per_gpu(sc(pp=4))
    assert one / 4 < four < one / 3.5  # the worst stage also holds an embedding matrix


def test_stages_across_nodes_send_over_the_network() -> None:
    near = make_pipeline(sc(batch=1, pp=2, tp=4))
    far = make_pipeline(sc(batch=1, pp=4, tp=4))  # 16 GPUs: 2 nodes of 8
    step = Step("decode", 1.0, 1.0, 600.0)
    hop = [
        next(p for p in pl.price_step(step) if p.op.name == "pp.send_recv") for pl in (near, far)
    ]
    system = near.scenario.system
    assert hop[0].comm_s == pytest.approx(send_recv_s(5120 * 2.0, system))
    assert hop[1].comm_s == pytest.approx(send_recv_s(5120 * 2.0, system, cross_node=True))


def test_pp_and_ep_comm_ops_broadcast_over_grids() -> None:
    s = make_scenario("mixtral-8x7b", "h100-sxm", tp=2, ep=2, pp=2, **KW)
    pipeline = make_pipeline(s)
    B = np.array([[1.0], [32.0]])
    L = np.array([[600.0, 1200.0]])
    grid = step_time_s(pipeline.price_step(Step("decode", B, 1.0, L)))
    point = step_time_s(pipeline.price_step(Step("decode", 32.0, 1.0, 1200.0)))
    assert grid.shape == (2, 2) and grid[1, 1] == pytest.approx(float(point))
