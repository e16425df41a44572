"""The vectorised step-structure hooks (`Optimization.timing`, `prompt_tokens`;
model/optimizations/_timing.py): on a grid of batch sizes they give what `Pipeline.predict`
gives one batch at a time, and every `result` hook without a `timing` hook only adds notes (so
callers that price grids, like the capacity planner, miss no change in time)."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.model.optimizations import parse_opt, registry
from rooflens.model.optimizations.base import Optimization
from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.steps import Step, StepTiming
from rooflens.model.pricing.roofline import step_time_s

# Settings that make each optimization do something (the defaults of some are neutral).
ACTIVE = {
    "speculative": "speculative:draft=llama-3-8b,gamma=4,alpha=0.7",
    "distill": "distill:student=llama-3-8b",
    "prune": "prune:heads=0.5,ffn=0.25",
    "moe": "moe:capacity_factor=1.25,imbalance=1.3",
    "prompt-compression": "prompt-compression:ratio=3,compressor=phi-2",
    "offload": "offload:fraction=0.1",
}
TIMED = [
    "speculative:draft=llama-3-8b,gamma=4,alpha=0.7",
    "medusa:heads=4,alpha=0.6",
    "lookahead",
    "prompt-compression:ratio=3,compressor=phi-2",
    "offload:fraction=0.1",
    "offload:fraction=0.05,overlap=false",
    "eager-launch:per_launch_us=40",
]


def scenario(batch: int = 1, model: str = "llama-3-70b"):  # type: ignore[no-untyped-def]
    return make_scenario(model, "h100-sxm", batch=batch, prompt_len=600, output_len=40, tp=4,
                         profile="calibrated")  # fmt: skip


def grid_timing(opts: list[str], batches: np.ndarray) -> StepTiming:
    """Every hook's `timing` over a column of batch sizes, as the capacity planner calls it."""
    pipe = make_pipeline(scenario(), opts)
    sc = pipe.scenario
    P = float(sc.workload.prompt_len)
    P_in = 600.0
    B = batches[:, None]
    kv = pipe.decode_kv_lens()[None, :]
    decode = pipe.price_step(Step("decode", B, 1.0, kv))
    prefill = pipe.price_step(Step("prefill", batches, P, P))
    t = StepTiming(batch=B, kv_lens=kv, prefill_batch=batches, prompt_tokens=P,
                   prompt_tokens_in=P_in, prefill_priced=prefill,
                   prefill_s=step_time_s(prefill), decode_priced=decode,
                   decode_step_s=step_time_s(decode))  # fmt: skip
    for opt in pipe.opts:
        t = opt.timing(t, sc, pipe)
    return t


@pytest.mark.parametrize("text", TIMED)
def test_grid_timing_equals_scalar_predictions(text: str) -> None:
    batches = np.array([1.0, 8.0, 64.0])
    t = grid_timing([text], batches)
    tpot = np.mean(np.broadcast_to(t.tpot_s, (3, 39)), axis=1)
    ttft = np.broadcast_to(t.prefill_s, (3,))
    for i, b in enumerate(batches):
        pred = run(scenario(int(b)), [text])
        assert tpot[i] == pytest.approx(pred.tpot_s, rel=1e-12)
        assert ttft[i] == pytest.approx(pred.ttft_s, rel=1e-12)
    plain = grid_timing([], batches)  # and the hook does change the step times
    assert not (np.allclose(t.tpot_s, plain.tpot_s) and np.allclose(t.prefill_s, plain.prefill_s))


PAIRS = [
    (a, b)
    for i, a in enumerate(TIMED[:5] + TIMED[6:])
    for b in (TIMED[:5] + TIMED[6:])[i + 1 :]
    if {a.split(":")[0], b.split(":")[0]} - {"speculative", "medusa", "lookahead"}
]


@pytest.mark.parametrize(("first", "second"), PAIRS)
def test_a_pair_of_timed_optimizations_composes_as_on_the_grid(first: str, second: str) -> None:
    """Second route for stacks: the planner chains `timing` hooks on StepTiming; predict
    chains `result` hooks on Predictions, which carry the last timing on (Prediction.timing).
    Before, a later hook rebuilt the timing from the rows and lost what an earlier one set: τ
    (speculative + eager-launch charged the whole draft-and-verify iteration per token, 3.4×)
    or a copy (offload before speculative vanished: 60.6 ms → 1.6 ms per token on gemma-3-4b)."""
    batches = np.array([1.0, 16.0])
    t = grid_timing([first, second], batches)
    tpot = np.mean(np.broadcast_to(t.tpot_s, (2, 39)), axis=1)
    ttft = np.broadcast_to(t.prefill_s, (2,))
    for i, b in enumerate(batches):
        pred = run(scenario(int(b)), [first, second])
        assert tpot[i] == pytest.approx(pred.tpot_s, rel=1e-12)
        assert ttft[i] == pytest.approx(pred.ttft_s, rel=1e-12)


def test_offload_and_host_time_apply_to_the_whole_draft_and_verify_iteration() -> None:
    """Closed forms on top of speculative decoding: the offloaded share of the target's weights
    crosses PCIe once per iteration (the draft's stay on the GPU), and eager launch charges every
    kernel the iteration issues, the draft's γ steps included; τ tokens share each."""
    from rooflens.model.optimizations.offload import weight_bytes_read
    from rooflens.model.pricing.host import step_launches

    spec = "speculative:draft=llama-3-8b,gamma=4,alpha=0.7"
    sc = scenario()
    alone = run(sc, [spec])
    tau = (1 - 0.7**5) / (1 - 0.7)
    rows = alone.decode.priced
    target = sum(p.op.weight_bytes * p.op.count for p in rows if p.op.phase != "draft")
    assert np.allclose(weight_bytes_read(rows), target)
    copy_s = 0.1 * np.mean(weight_bytes_read(rows)) / sc.gpu.pcie_bytes_per_s
    offloaded = run(sc, [spec, "offload:fraction=0.1"])
    assert offloaded.tpot_s == pytest.approx(max(copy_s, alone.tpot_s * tau) / tau, rel=0.02)
    launches = float(np.mean(step_launches(p.op for p in rows)))
    assert launches > 9 * (4 * 32 + 80)  # γ = 4 draft steps of 32 layers, a verify of 80
    host = run(sc, [spec, "eager-launch:per_launch_us=40"])
    step_s = float(np.mean(step_time_s(rows)))
    # at 40 µs a launch the iteration is host-bound, so its split decode attention runs
    # unsplit (model/pricing/host.py unsplit_if_host_bound): one combine launch fewer per split
    # call, the draft's included
    combines = float(np.mean(sum(p.op.count * (np.asarray(p.op.shape.get("kernels", 1.0)) - 1)
                                 for p in rows if p.op.kind == "attention")))  # fmt: skip
    assert combines > 0 and (launches - combines) * 40e-6 > step_s
    assert host.tpot_s == pytest.approx((launches - combines) * 40e-6 / tau, rel=0.02)
    assert host.tpot_s < max(step_s, launches * 40e-6) / tau  # what it cost split


def test_prompt_tokens_hook_is_the_scenario_transform() -> None:
    opt = parse_opt("prompt-compression:ratio=3")
    lengths = np.array([1.0, 2.0, 3.0, 599.0, 600.0, 601.0])
    mapped = opt.prompt_tokens(lengths)
    for P, P2 in zip(lengths, mapped, strict=True):
        sc = make_scenario("llama-3-8b", "h100-sxm", prompt_len=int(P), output_len=8)
        assert make_pipeline(sc, [opt]).scenario.workload.prompt_len == P2
    assert parse_opt("prompt-compression").prompt_tokens(lengths) is lengths  # R = 1: identity


def test_neutral_timing_is_the_identity() -> None:
    t = grid_timing([], np.array([1.0, 4.0]))
    for opt in [Optimization(), parse_opt("medusa:heads=0"), parse_opt("offload:fraction=0"),
                parse_opt("lookahead:ngram=1")]:  # fmt: skip
        assert opt.timing(t, scenario(), make_pipeline(scenario())) is t


@pytest.mark.parametrize("name", sorted(registry()))
def test_result_hooks_without_timing_only_add_notes(name: str) -> None:
    cls = registry()[name]
    if cls.result is Optimization.result or cls.timing is not Optimization.timing:
        return
    text = ACTIVE.get(name, name)
    sc = scenario(batch=4, model="mixtral-8x7b" if name == "moe" else "llama-3-70b")
    pipe = make_pipeline(sc, [parse_opt(text)])
    pred = pipe.predict()
    # the prediction before the result hooks: the same pipeline with `result` switched off
    hooked = pipe.opts[0]
    before = type(hooked).result
    try:
        type(hooked).result = Optimization.result  # type: ignore[method-assign]
        plain = pipe.predict()
    finally:
        type(hooked).result = before  # type: ignore[method-assign]
    assert (pred.ttft_s, pred.tpot_s, pred.e2e_s) == (plain.ttft_s, plain.tpot_s, plain.e2e_s)
    assert pred.memory == plain.memory
