"""Sidebar choices replayed in AppTest: the speculative draft defaults to the
family's smallest preset (and says so when there is none), a sidebar optimization that a stack
also lists is given once, the TP caption never recommends a TP that does not fit, the planner's
"every GPU" survives a link, numbers never show an exponent, and a sliding window runs past the
model's context with its quality assumption stated."""

from __future__ import annotations

import re

import pytest
from apptest_helpers import assert_clean, metrics, si

from rooflens.dashboard import sweeps
from rooflens.dashboard.settings import DEFAULTS
from rooflens.io.units import fmt_time
from rooflens.model.predict.api import make_scenario, run

EXPONENT = re.compile(r"\d[eE][+-]?\d")


def test_speculative_defaults_to_the_familys_smallest_draft(app) -> None:  # type: ignore[no-untyped-def]
    at = app(model="llama-3.1-70b", opt="speculative")
    assert_clean(at)
    assert at.sidebar.selectbox(key="opt.speculative.draft").value == "llama-3.1-8b"
    assert at.query_params["opt"] == ["speculative:draft=llama-3.1-8b"] or (
        at.query_params["opt"] == "speculative:draft=llama-3.1-8b"
    )
    sc = make_scenario("llama-3.1-70b", "h100-sxm", batch=8, tp=4, profile=DEFAULTS.profile)
    direct = run(sc, ["speculative:draft=llama-3.1-8b"])
    assert si(metrics(at)["TPOT"]) == pytest.approx(direct.tpot_s, rel=5e-3)
    # a new target gets a draft that shares its tokenizer
    at.sidebar.selectbox(key="model").set_value("opt-66b").run()
    assert_clean(at)
    assert at.sidebar.selectbox(key="opt.speculative.draft").value == "opt-6.7b"


def test_no_draft_for_the_family_is_said_in_the_widget(app) -> None:  # type: ignore[no-untyped-def]
    at = app(model="phi-2", tp="1", opt="speculative")
    assert_clean(at)
    said = " ".join(w.value for w in at.sidebar.warning)
    assert "no preset shares phi-2's tokenizer" in said
    assert len(at.metric) == 7  # the page renders (the six tiles and energy), no speculation
    plain = run(make_scenario("phi-2", "h100-sxm", batch=8, tp=1, profile=DEFAULTS.profile))
    assert si(metrics(at)["TPOT"]) == pytest.approx(plain.tpot_s, rel=5e-3)


def test_optimization_in_sidebar_and_stack_is_given_once(app) -> None:  # type: ignore[no-untyped-def]
    at = app(page="optimizations", opt="quant:scheme=gptq")
    assert_clean(at)  # no "--opt quant given twice"
    said = " ".join(c.value for c in at.caption)
    assert "Stack B lists quant itself: its setting wins over the sidebar's" in said
    assert len([c for c in at.get("plotly_chart")]) == 2


def test_tp_caption_never_recommends_a_tp_that_does_not_fit(app) -> None:  # type: ignore[no-untyped-def]
    # Llama 3 70B at batch 64 on H100s: TP 1 (141 GB of weights) cannot fit
    at = app(page="scaling", sweep="TP degree", batch="64")
    assert not at.exception
    frame = sweeps.tp_sweep(DEFAULTS.with_(batch=64))
    assert not frame.loc[frame["tp"] == 1, "fits"].item()
    caption = next(c.value for c in at.caption if c.value.startswith("TP degrees"))
    assert "TP 1 does not fit" in caption or "TP 1, " in caption
    picks = re.findall(r"at TP (\d+)", caption)
    fitting = set(frame.loc[frame["fits"], "tp"].astype(str))
    assert picks and set(picks) <= fitting


def test_planner_link_keeps_every_gpu(app) -> None:  # type: ignore[no-untyped-def]
    at = app(page="planner", plan_gpus="none", plan_sim="0", plan_tp="8",
             plan_wdtypes="fp8", plan_kvdtypes="fp8")  # fmt: skip
    assert not at.exception
    assert at.multiselect(key="plan_gpus").value == []
    link = at.query_params.get_all("plan_gpus") if hasattr(at.query_params, "get_all") else None
    assert (link or at.query_params["plan_gpus"]) in (["none"], "none")


def test_long_times_read_in_human_units() -> None:
    assert fmt_time(12_200) == "3.39 h" and fmt_time(150) == "2.5 min"
    assert fmt_time(4.2 * 86_400) == "4.2 days" and fmt_time(0.0122) == "12.2 ms"


def test_no_exponent_anywhere_on_a_huge_scenario(app) -> None:  # type: ignore[no-untyped-def]
    # 405B on 16 GPUs with a 100k prompt at batch 256: minutes of prefill, millions of tokens
    at = app(model="llama-3.1-405b", tp="16", batch="256", prompt="100000", wdtype="fp8")
    assert not at.exception
    texts = [m.value for m in at.metric] + [c.value for c in at.caption]
    for table in at.table:
        texts += [str(v) for v in table.value.to_numpy().ravel()]
    assert texts and not [t for t in texts if EXPONENT.search(t)]


def test_sliding_window_runs_past_the_models_context(app) -> None:  # type: ignore[no-untyped-def]
    # Llama 3 8B holds 8,192 tokens; with a 4,096-token window and 4 sinks (StreamingLLM)
    # a 32k prompt is a fixed-size cache: allowed, with the assumption stated
    at = app(model="llama-3-8b", tp="1", prompt="32000",
             opt="sliding-window:window=4096,sinks=4")  # fmt: skip
    assert_clean(at)
    said = " ".join(i.value for i in at.info)
    assert "past its 8,192-token context" in said and "StreamingLLM" in said
    short = app(model="llama-3-8b", tp="1", prompt="8000",
                opt="sliding-window:window=4096,sinks=4")  # fmt: skip
    # the cache holds W + S positions either way: the same memory and TPOT
    assert metrics(at)["TPOT"] == metrics(short)["TPOT"]
    assert metrics(at)["Memory per GPU"] == metrics(short)["Memory per GPU"]
    without = app(model="llama-3-8b", tp="1", prompt="32000")
    assert "max context" in " ".join(e.value for e in without.sidebar.error)
