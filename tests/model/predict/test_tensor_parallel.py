"""Tensor parallelism invariants (model/ops/table.py tp.* ops, model/predict/memory.py,
model/pricing/comm.py)."""

from __future__ import annotations

import itertools

import pytest

from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.memory import weights_bytes_per_gpu
from rooflens.model.predict.steps import Step
from rooflens.model.pricing.comm import all_reduce_s
from rooflens.model.specs.presets import get_model

MODELS = ["llama-2-7b", "llama-3-70b", "mixtral-8x7b", "gpt3-175b", "opt-13b", "deepseek-v3"]


def valid_tp(model: str) -> list[int]:
    m = get_model(model)
    out = []
    for tp in (1, 2, 4, 8, 16):
        if m.n_heads % tp == 0 and (m.attention == "mla" or m.n_kv_heads % tp == 0
                                    or tp % m.n_kv_heads == 0):  # fmt: skip
            out.append(tp)
    return out


@pytest.mark.parametrize("model", MODELS)
def test_tp_never_raises_per_gpu_weight_bytes(model: str) -> None:
    step = Step("decode", 4.0, 1.0, 300.0)
    stored, read = [], []
    for tp in valid_tp(model):
        sc = make_scenario(model, "h100-sxm", tp=tp, prompt_len=200, output_len=8)
        stored.append(weights_bytes_per_gpu(sc))
        read.append(sum(float(o.weight_bytes) * o.count for o in make_pipeline(sc).step_ops(step)))
    assert len(stored) > 2
    assert all(b <= a for a, b in itertools.pairwise(stored)), stored
    assert all(b <= a for a, b in itertools.pairwise(read)), read


def test_tp_1_has_no_communication() -> None:
    sc = make_scenario("llama-3-8b", "h100-sxm")
    ops = make_pipeline(sc).step_ops(Step("decode", 8.0, 1.0, 600.0))
    assert not [o for o in ops if o.kind == "comm"]


def test_two_all_reduces_per_layer_priced_by_the_ring() -> None:
    # Megatron-LM (Shoeybi et al. 2019): one all-reduce after attention, one after the MLP.
    sc = make_scenario("llama-3-70b", "h100-sxm", tp=4, batch=16, profile="ideal")
    pipeline = make_pipeline(sc)
    priced = [
        p for p in pipeline.price_step(Step("decode", 16.0, 1.0, 600.0)) if p.op.kind == "comm"
    ]
    assert [p.op.name for p in priced] == ["tp.all_reduce", "tp.all_reduce"]
    payload = 16 * 8192 * 2.0
    for p in priced:
        assert p.op.count == 80 and p.op.comm_bytes == payload
        assert p.comm_s == pytest.approx(all_reduce_s(payload, 4, sc.system))


def test_tp_lowers_batch_1_latency_of_a_big_model() -> None:
    tpot = [run(make_scenario("llama-3-70b", "h100-sxm", tp=tp, output_len=32)).tpot_s
            for tp in (2, 4, 8)]  # fmt: skip
    assert tpot[0] > tpot[1] > tpot[2]
