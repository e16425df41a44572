"""TP and EP across a 72-GPU NVLink domain (GB200 NVL72): collectives of 16 GPUs are priced on
NVLink, with the same link latency and bandwidth as 8, never on the scale-out network."""

from __future__ import annotations

import pytest

from rooflens.hardware.presets import links
from rooflens.model.predict.api import make_pipeline, make_scenario
from rooflens.model.predict.steps import Step
from rooflens.model.pricing.comm import all_reduce_s, load_comm_calibration

NVLINK5 = links()["nvlink5"]
D_405B = 16384  # Llama-3.1-405B hidden size (its config.json)


def comm_rows(model: str, system: str, profile: str, batch: int, **par: int) -> list:
    sc = make_scenario(model, system, batch=batch, profile=profile, **par)
    step = Step("decode", float(batch), 1.0, 600.0)
    return [p for p in make_pipeline(sc).price_step(step) if p.op.kind == "comm"]


@pytest.mark.parametrize("tp", [8, 16])
def test_405b_all_reduce_at_tp_8_and_16_is_one_nvlink_hop_plus_the_ring(tp: int) -> None:
    # Closed form of the ideal ring on NVLink 5: one hop at the hardware floor, then
    # 2(tp-1)/tp of the payload through 900 GB/s one way (Patarasuk & Yuan 2009).
    rows = comm_rows("llama-3.1-405b", "gb200-nvl72", "ideal", batch=16, tp=tp)
    payload = 16 * D_405B * 2.0  # bf16 activations of 16 decode tokens
    expected = 0.6e-6 + 2 * (tp - 1) / tp * payload / 900e9
    assert [r.op.name for r in rows] == ["tp.all_reduce", "tp.all_reduce"]
    for r in rows:
        assert r.op.comm_bytes == payload
        assert r.comm_s == pytest.approx(expected, rel=1e-9)


def test_tp_16_on_the_rack_is_cheaper_than_across_two_dgx_b200() -> None:
    # The same 16-GPU all-reduce on 8-GPU boxes crosses InfiniBand (50 GB/s per GPU).
    rack = comm_rows("llama-3.1-405b", "gb200-nvl72", "ideal", batch=16, tp=16)[0].comm_s
    boxes = comm_rows("llama-3.1-405b", "dgx-b200", "ideal", batch=16, tp=16)[0].comm_s
    assert boxes > 2 * rack


def test_calibrated_tp_16_runs_nccl_over_nvlink() -> None:
    # Beyond the engines' 8-GPU custom all-reduce, NCCL's protocols on the NVLink link.
    rows = comm_rows("llama-3.1-405b", "gb200-nvl72", "calibrated", batch=16, tp=16)
    sc = make_scenario("llama-3.1-405b", "gb200-nvl72", batch=16, tp=16)
    payload = 16 * D_405B * 2.0
    nccl = all_reduce_s(payload, 16, sc.system, load_comm_calibration())
    assert sc.system.link_for(16) == NVLINK5
    assert rows[0].comm_s == pytest.approx(nccl, rel=1e-9)


def test_deepseek_v3_ep_16_all_to_all_stays_on_nvlink() -> None:
    rows = comm_rows("deepseek-v3", "gb200-nvl72", "ideal", batch=16, ep=16)
    assert {r.op.name for r in rows} == {"ep.dispatch", "ep.combine"}
    for r in rows:
        expected = 0.6e-6 + 15 / 16 * r.op.comm_bytes / 900e9  # one hop, (n-1)/n of the buffer
        assert r.comm_s == pytest.approx(expected, rel=1e-9)
