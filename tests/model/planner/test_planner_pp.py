"""Pipeline parallelism in the planner (model/planner/curves.py, serving.py, sim.py) takes its
stage timing from model/predict/pp_schedule.py, as `rooflens predict` does: the curves of a PP
group equal predict's numbers for the same scenario, and the stage-to-stage send is charged once.

Why the planner's PP figures moved (issue 14): the planner used to add its own
(PP−1)·(tokens·D·bytes/BW + latency) on top of steps whose `pp.send_recv` rows already hold
those sends, so every PP>1 decode token and prefill paid them twice; and it cut M sequences into
PP micro-batches even when M < PP (half a sequence per micro-batch). On llama-2-70b, A100,
TP 2, prompt 1000: PP 2 prefill 240.557 -> 240.497 ms, PP 4 decode at M = 8 34.880 -> 34.870 ms
(both now equal to predict's)."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.model.optimizations import parse_opt
from rooflens.model.planner.curves import Curves, Group, build_curves
from rooflens.model.planner.plan import recheck
from rooflens.model.planner.sim import simulate
from rooflens.model.planner.step_costs import CurveCosts
from rooflens.model.planner.workload import LengthDist, ServingWorkload
from rooflens.model.predict.api import make_scenario, run
from rooflens.model.specs.presets import get_model

MODEL, GPU, TP, P = "llama-2-13b", "a100-sxm-80gb", 2, 1000
# fixed lengths with two output tokens: the planner's mean KV length P + O/2 is predict's one
# decode step at P + 1 (ServingWorkload.kv_len_mean_tokens)
W = ServingWorkload(rate_per_s=1.0, prompt=LengthDist.parse(str(P)), output=LengthDist.parse("2"))


def curves(pp: int) -> Curves:
    group = Group(GPU, TP, pp, 1, "bf16", "bf16", "bf16")
    return build_curves(get_model(MODEL), group, W, [], profile="ideal", chunk_tokens=2048,
                        overhead_bytes=1.5 * 2**30)  # fmt: skip


def predict(pp: int, batch: int) -> tuple[float, float]:
    sc = make_scenario(MODEL, GPU, batch=batch, tp=TP, pp=pp, prompt_len=P, output_len=2,
                       prefill_chunk=2048, profile="ideal")  # fmt: skip
    pred = run(sc)
    return pred.ttft_s, pred.tpot_s


@pytest.mark.parametrize("pp", [2, 4])
def test_planner_decode_and_prefill_equal_predict(pp: int) -> None:
    """Second route: `rooflens predict` at batch M (M on the planner's integer grid, fewer and
    more sequences than stages) and at batch 1 for one prompt's prefill."""
    c = curves(pp)
    for M in (1, 2, 3, 4, 8, 16):
        _, tpot_s = predict(pp, M)
        assert np.interp(M, c.tokens, c.decode_s) == pytest.approx(tpot_s, rel=1e-9), M
    ttft_s, _ = predict(pp, 1)
    assert c.prefill_s[0] == pytest.approx(ttft_s, rel=1e-9)


def test_the_stage_send_is_charged_once() -> None:
    """Closed form: PP adds (PP−1)·(tokens·D·bytes/BW + latency) to a lone sequence's decode
    token (1 token) and to a prompt's prefill (P tokens), on the ideal profile's NVLink (one hop
    at the link's hardware floor, hardware/presets/links.yaml hop_latency_s)."""
    link = make_scenario(MODEL, GPU).system.intra_node
    D, act_bytes = get_model(MODEL).d_model, 2.0  # bf16 activations

    def send(tokens: float) -> float:
        return tokens * D * act_bytes / link.bytes_per_s + link.floor_latency_s

    plain = curves(1)
    for pp in (2, 4):
        c = curves(pp)
        assert c.decode_s[0] - plain.decode_s[0] == pytest.approx((pp - 1) * send(1), rel=1e-6)
        assert c.prefill_s[0] - plain.prefill_s[0] == pytest.approx((pp - 1) * send(P), rel=1e-6)
        assert c.prefill_hop_s[0] == pytest.approx(send(P), rel=1e-9)


def test_a_prompt_holds_the_first_stage_for_one_gpipe_slot() -> None:
    """The queue of prompts advances by one stage slot: predict's TTFT of two one-sequence
    micro-batches less that of one (GPipe: through + (m − 1)·slot)."""
    one, _ = predict(4, 1)
    two, _ = predict(4, 2)
    costs = CurveCosts(curves(4))
    hold = float(costs.prefill_hold_s(np.array([float(P)]))[0])
    assert hold == pytest.approx(two - one, rel=1e-9)
    assert hold < one / 3  # a quarter of the layers plus one send
    alone = CurveCosts(curves(1))
    assert alone.prefill_hold_s(np.array([float(P)]))[0] == alone.prefill_s(np.array([float(P)]))[0]


def test_recheck_replays_a_pp_row_at_its_batch() -> None:
    """The recommendation's re-check (and its energy) runs predict on the row's sequences in
    flight, which is what the planner's curves priced; it used to run batch / PP."""
    row = {"gpu": GPU, "tp": TP, "pp": 4, "ep": 1, "weight_dtype": "bf16", "act_dtype": "bf16",
           "kv_dtype": "bf16", "opts": "", "batch": 12}  # fmt: skip
    single, full = recheck(row, MODEL, W, "ideal", 2048)
    c = curves(4)
    assert full.scenario.workload.batch == 12
    assert full.tpot_s == pytest.approx(np.interp(12, c.tokens, c.decode_s), rel=1e-9)
    assert single.ttft_s == pytest.approx(c.prefill_s[0], rel=1e-9)


def test_the_simulation_queues_prompts_on_the_stage_slot() -> None:
    """Single-token requests make a colocated PP replica an M/D/1 queue whose server is the
    first stage (held one slot H per prompt) while each prompt still takes S to its token:
    mean TTFT = S + λH²/(2(1 − λH)) (Pollaczek–Khinchine), at a load λH = 0.6 that one prompt
    at a time (H = S) could not carry."""
    costs = CurveCosts(curves(4))
    n, prompt = 20_000, np.array([float(P)])
    S, H = float(costs.prefill_s(prompt)[0]), float(costs.prefill_hold_s(prompt)[0])
    lam = 0.6 / H
    arrivals = np.cumsum(np.random.default_rng(0).exponential(1.0 / lam, n))
    r = simulate(costs, "colocated", arrivals, np.full(n, float(P)), np.ones(n), 10**6)
    assert r.ttft_mean_s == pytest.approx(S + lam * H * H / (2 * (1 - lam * H)), rel=0.03)
    assert lam * S > 1.0


@pytest.mark.parametrize(
    "opt", ["speculative:draft=llama-2-7b", "medusa", "lookahead", "offload:fraction=0.1",
            "eager-launch"],
)  # fmt: skip
def test_step_structure_optimizations_on_pp_agree_with_the_planner(opt: str) -> None:
    """Second route for `predict` with a decode-retiming optimization on top of PP: the
    planner's curves run the hook on one micro-batch and take the GPipe cycle; predict's
    `result` hooks now do the same (optimizations/_timing.py). Before, predict re-timed the
    whole batch in one pass after PP: lookahead at PP 2, 16 sequences, gave 22.35 ms per token,
    the single-stage figure, against 11.28 ms here."""
    for pp in (2, 4):
        group = Group(GPU, TP, pp, 1, "bf16", "bf16", "bf16")
        c = build_curves(get_model(MODEL), group, W, [parse_opt(opt)], profile="ideal",
                         chunk_tokens=2048, overhead_bytes=1.5 * 2**30)  # fmt: skip
        for M in (1, 4, 16):
            sc = make_scenario(MODEL, GPU, batch=M, tp=TP, pp=pp, prompt_len=P, output_len=2,
                               prefill_chunk=2048, profile="ideal")  # fmt: skip
            tpot_s = run(sc, [opt]).tpot_s
            assert np.interp(M, c.tokens, c.decode_s) == pytest.approx(tpot_s, rel=1e-9), (pp, M)
