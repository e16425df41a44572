"""Medusa (model/optimizations/medusa.py): extra heads, verification width, batch behaviour."""

from __future__ import annotations

import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations._drafting import expected_tokens
from rooflens.model.optimizations.medusa import Medusa
from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.steps import Step
from rooflens.model.pricing.roofline import price_ops, step_time_s


def scenario(batch: int = 1, tp: int = 1):
    return make_scenario("llama-2-7b", "a100-sxm-80gb", batch=batch, tp=tp, prompt_len=256,
                         output_len=64)  # fmt: skip


def test_zero_heads_is_the_identity() -> None:
    sc = scenario(batch=4)
    assert run(sc, [Medusa(heads=0)]).to_dict() == run(sc).to_dict()


@pytest.mark.parametrize("tp", [1, 2])
def test_head_weights_are_in_memory(tp: int) -> None:
    # Each Medusa-1 head: ResBlock (D×D + D bias) and its own D×V vocabulary projection, bf16.
    sc = scenario(tp=tp)
    D, V = 4096, 32000
    extra = run(sc, [Medusa(heads=5)]).memory.extra_bytes - run(sc).memory.extra_bytes
    assert extra == pytest.approx(5 * (D * D + D + V * D / tp) * 2)


def test_step_is_one_verification_plus_the_heads() -> None:
    sc = scenario(batch=2)
    opt = Medusa(heads=4, alpha=0.7, tree=16)
    pipeline = make_pipeline(sc, [opt])
    L = pipeline.decode_kv_lens()
    verify = step_time_s(pipeline.price_step(Step("verify", 2.0, 16.0, L + 15.0, 16.0)))
    heads = step_time_s(price_ops(opt.head_ops(sc, 2.0), sc.system, pipeline.profile))
    tau = (1 - 0.7**5) / 0.3
    assert tau == pytest.approx(expected_tokens(0.7, 4))
    assert pipeline.predict().tpot_s == pytest.approx(float((verify + heads).mean()) / tau)


def test_speedup_falls_with_batch() -> None:
    gains = [run(scenario(b)).tpot_s / run(scenario(b), [Medusa()]).tpot_s for b in (1, 64, 256)]
    assert gains[0] > 2.0  # τ = 2.31 tokens for about one memory-bound step
    assert gains[0] > gains[1] > gains[2]


def test_tree_must_hold_the_chain() -> None:
    with pytest.raises(RooflensError, match="tree"):
        Medusa(heads=4, tree=3)


def test_drafting_methods_do_not_stack() -> None:
    from rooflens.model.optimizations.speculative import Speculative

    with pytest.raises(RooflensError, match="both replace the decode step"):
        run(scenario(), [Medusa(), Speculative(draft="llama-2-7b")])
