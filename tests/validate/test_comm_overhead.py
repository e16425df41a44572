"""A collective pays its protocol's latency once: under `calibrated` the fitted NCCL protocols
(hardware/calibration/comm-a100.yaml, model/pricing/comm.py) already hold the base latency of a
call,
so pricing must not add a kernel's per-call overhead to comm ops (it still does to kernels)."""

from __future__ import annotations

import pytest

from rooflens.hardware.profiles import get_profile
from rooflens.model.ops.table import decode_ops
from rooflens.model.predict.api import make_scenario
from rooflens.model.pricing.comm import all_reduce_s, all_to_all_s, protocols_for
from rooflens.model.pricing.custom_allreduce import engine_all_reduce_s
from rooflens.model.pricing.roofline import per_launch_s, price_op


@pytest.fixture(scope="module")
def tp_scenario():
    return make_scenario("llama-3-70b", "a100-sxm-80gb", tp=4, batch=8, profile="calibrated")


def test_calibrated_comm_op_costs_exactly_its_collective(tp_scenario):
    profile = get_profile("calibrated", tp_scenario.gpu)
    # the fallback kind a comm op would have taken has a launch floor: not charged to the comm
    assert per_launch_s(profile.kind("comm"), tp_scenario.gpu) > 0
    ops = decode_ops(tp_scenario, 1024.0)
    comm = [op for op in ops if op.kind == "comm"]
    assert comm and {op.name for op in comm} == {"tp.all_reduce"}
    for op in comm:
        nccl = all_reduce_s(op.comm_bytes, 4, tp_scenario.system, protocols_for(profile))
        # the all-reduce the engine runs: its own one-node kernel where faster, else NCCL's
        expected = engine_all_reduce_s(op.comm_bytes, 4, tp_scenario.system, profile.engine, nccl)
        assert float(price_op(op, tp_scenario.system, profile).time_s) == pytest.approx(
            float(expected), rel=1e-12
        )


def test_expert_parallel_all_to_all_pays_no_kernel_overhead():
    sc = make_scenario("mixtral-8x7b", "a100-sxm-80gb", tp=1, ep=2, batch=16,
                       profile="calibrated")  # fmt: skip
    profile = get_profile("calibrated", sc.gpu)
    dispatch = [op for op in decode_ops(sc, 512.0) if op.name == "ep.dispatch"]
    assert dispatch
    op = dispatch[0]
    expected = all_to_all_s(op.comm_bytes, 2, sc.system, protocols_for(profile))
    assert float(price_op(op, sc.system, profile).time_s) == pytest.approx(float(expected))


def test_kernels_still_pay_their_overhead(tp_scenario):
    profile = get_profile("calibrated", tp_scenario.gpu)
    ops = decode_ops(tp_scenario, 1024.0)
    act = next(op for op in ops if op.name == "mlp.act")
    priced = price_op(act, tp_scenario.system, profile)
    eff = profile.kind("elementwise")
    no_floor = eff.model_copy(update={"overhead_s": 0, "overhead_cycles": 0})
    free = profile.model_copy(update={"kinds": {**profile.kinds, "elementwise": no_floor}})
    busy = price_op(act, tp_scenario.system, free).time_s  # the same terms, no launch floor
    overhead = per_launch_s(eff, tp_scenario.gpu)
    assert overhead > 1e-6
    assert float(priced.time_s) == pytest.approx(float(busy) + overhead)
