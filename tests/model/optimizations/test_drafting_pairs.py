"""Every drafting optimization (speculative, Medusa, lookahead) against every other registered
optimization: the draft and the verification step see the same transforms as the target.

The second route is the draft model run as a target of its own: its decode step under the same
optimization, priced by a separate pipeline, must equal the draft rows speculative decoding
charges. Issue 15 item 3: a 4096-token window on Llama-3.1-70B left the 8B draft's attention
unwindowed, so TPOT grew from 5.25 ms at 4k context to 6.67 ms at 130k.
"""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations import parse_opt, registry
from rooflens.model.optimizations._drafting import DRAFT_INHERITS, TARGET_ONLY
from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.steps import Step
from rooflens.model.pricing.roofline import step_time_s

TARGET, DRAFT, GPU, TP = "llama-3.1-70b", "llama-3.1-8b", "h100-sxm", 4
DRAFTING = ("speculative", "medusa", "lookahead")
SPEC = f"speculative:draft={DRAFT}"
WINDOW = "sliding-window:window=4096"


def _scenario(prompt_len: int, model: str = TARGET, output_len: int = 9):  # type: ignore[no-untyped-def]
    return make_scenario(model, GPU, tp=TP, prompt_len=prompt_len, output_len=output_len)


def test_every_optimization_is_classified_once() -> None:
    names = set(registry())
    assert DRAFT_INHERITS | TARGET_ONLY == names
    assert not DRAFT_INHERITS & TARGET_ONLY


@pytest.mark.parametrize("drafting", [SPEC, "medusa", "lookahead"])
def test_a_window_keeps_tpot_flat_with_context(drafting: str) -> None:
    # Every decode step attends min(L, 4096) positions once L ≥ 4096, for the target and (now)
    # the draft: the step, hence TPOT, is the same at 8k and 130k context.
    short = run(_scenario(8192), [WINDOW, drafting]).tpot_s
    long = run(_scenario(130_000), [WINDOW, drafting]).tpot_s
    assert long == pytest.approx(short, rel=1e-9)
    plain = run(_scenario(130_000), [drafting]).tpot_s
    assert plain > 1.05 * long  # without the window the long context costs more


def _standalone_draft_step_s(opt: str, prompt_len: int, kv: np.ndarray, gamma: int) -> float:
    """The draft model as its own target under `opt`: γ decode steps at the mean draft
    position, priced by an independent pipeline."""
    pipe = make_pipeline(_scenario(prompt_len, DRAFT), [opt])
    step = Step("draft", 1.0, 1.0, kv + (gamma - 1) / 2.0)
    return float(np.mean(step_time_s(pipe.price_step(step)))) * gamma


def _drafting_pair_opts() -> list[str]:
    out = []
    for name in sorted(DRAFT_INHERITS):
        text = WINDOW if name == "sliding-window" else name
        try:
            parse_opt(text)
        except RooflensError:
            continue
        out.append(text)
    return out


@pytest.mark.parametrize("opt", _drafting_pair_opts())
def test_speculative_draft_is_priced_as_the_draft_model_under_the_same_optimization(
    opt: str,
) -> None:
    prompt_len = 8192
    pipe = make_pipeline(_scenario(prompt_len), [opt, SPEC])
    pred = pipe.predict()
    drafted = [p for p in pred.decode.priced if p.op.phase == "draft"]
    charged = float(np.mean(step_time_s(drafted)))
    kv = pipe.decode_kv_lens()
    assert charged == pytest.approx(_standalone_draft_step_s(opt, prompt_len, kv, 4), rel=1e-9)


@pytest.mark.parametrize("drafting", ["medusa", "lookahead"])
@pytest.mark.parametrize("opt", _drafting_pair_opts())
def test_self_drafting_verifies_under_the_same_optimization(drafting: str, opt: str) -> None:
    # Medusa and lookahead have no draft model: their verify step is the target's own step of
    # `width` tokens under every optimization, as a separate target pipeline prices it.
    sc = _scenario(8192)
    pipe = make_pipeline(sc, [opt, drafting])
    verify = [p for p in pipe.predict().decode.priced if p.op.phase == "verify"]
    width = float(parse_opt(drafting).width)  # type: ignore[attr-defined]
    kv = pipe.decode_kv_lens()
    alone = make_pipeline(sc, [opt])
    step = Step("verify", 1.0, width, kv + width - 1.0, lm_tokens=width)
    expected = float(np.mean(step_time_s(alone.price_step(step))))
    assert float(np.mean(step_time_s(verify))) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("drafting", [SPEC, "medusa", "lookahead"])
@pytest.mark.parametrize("name", sorted(registry()))
def test_every_pair_runs_or_says_why(drafting: str, name: str) -> None:
    """No pair raises anything but a one-line RooflensError, and no pair yields a NaN."""
    text = WINDOW if name == "sliding-window" else name
    try:
        pred = run(_scenario(2048), [text, drafting])
    except RooflensError as exc:
        assert "\n" not in str(exc)
        return
    assert np.isfinite(pred.tpot_s) and pred.tpot_s > 0
