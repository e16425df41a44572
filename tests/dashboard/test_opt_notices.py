"""Issue 26 §3: an optimization never changes silently. The draft picker lists only drafts that
can draft for the target; a draft that cannot (the previous target's, or a link's) is replaced
and the page says so under the chips; with no valid draft speculative decoding is left out and
the page says why, in the words the CLI uses (model/optimizations/speculative.py). Also §4's
link label: a topology caption names the link as the GPU's system preset does."""

from __future__ import annotations

import pytest
from apptest_helpers import assert_clean, metrics, si

from rooflens.cli import main
from rooflens.dashboard import sweeps
from rooflens.dashboard.settings import DEFAULTS
from rooflens.model.optimizations.speculative import draft_problem, no_draft_text
from rooflens.model.specs.presets import get_model


def _beside_chips(at) -> list[str]:  # type: ignore[no-untyped-def]
    """Sidebar warnings outside every expander (an expander starts collapsed)."""
    inside = {w.value for e in at.sidebar.expander for w in e.warning}
    return [w.value for w in at.sidebar.warning if w.value not in inside]


def _cli_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["predict", "--gpu", "h100-sxm", *argv]) == 2
    return capsys.readouterr().err


def test_a_new_target_without_a_draft_drops_speculative_and_says_so(app, capsys) -> None:  # type: ignore[no-untyped-def]
    at = app(model="llama-3.1-70b", opt="speculative")
    assert_clean(at)
    at.sidebar.selectbox(key="model").set_value("gpt-oss-20b").run()
    assert not at.exception
    target = get_model("gpt-oss-20b")
    said = " ".join(_beside_chips(at))
    assert f"speculative is left out: {no_draft_text(target)}" in said
    assert no_draft_text(target) in _cli_error(capsys, "--model", "gpt-oss-20b", "--opt",
                                               "speculative")  # fmt: skip
    # nothing invalid was picked: the scenario runs without speculation (never codellama-34b)
    assert "opt" not in at.query_params or "codellama" not in str(at.query_params["opt"])
    plain = sweeps.predict(DEFAULTS.with_(model="gpt-oss-20b", opts=()))
    assert si(metrics(at)["TPOT"]) == pytest.approx(plain.tpot_s, rel=5e-3)
    assert "decode speedup" not in " ".join(c.value for c in at.caption)


def test_a_draft_with_no_effect_is_said_beside_the_chip(app) -> None:  # type: ignore[no-untyped-def]
    at = app(model="qwen3-8b", tp="1", opt="speculative")
    assert_clean(at)
    assert f"speculative is left out: {no_draft_text(get_model('qwen3-8b'))}" in " ".join(
        _beside_chips(at)
    )


def test_a_links_invalid_draft_is_replaced_and_said(app, capsys) -> None:  # type: ignore[no-untyped-def]
    at = app(model="llama-3.1-70b", opt="speculative:draft=llama-2-7b")
    assert_clean(at)
    picker = at.sidebar.selectbox(key="opt.speculative.draft")
    assert picker.value == "llama-3.1-8b"
    target = get_model("llama-3.1-70b")
    assert all(draft_problem(target, get_model(o)) is None for o in picker.options)
    reason = draft_problem(target, get_model("llama-2-7b"))
    assert reason and "another tokenizer" in reason
    said = " ".join(_beside_chips(at))
    assert f"draft llama-3.1-8b instead of llama-2-7b, because {reason}" in said
    assert reason in _cli_error(capsys, "--model", "llama-3.1-70b", "--tp", "4", "--opt",
                                "speculative:draft=llama-2-7b")  # fmt: skip
    # a valid draft the user keeps is said no more
    at.sidebar.number_input(key="batch").set_value(4).run()
    assert "instead of" in " ".join(_beside_chips(at))  # same target, same draft: still said
    at.sidebar.selectbox(key="model").set_value("llama-3.1-405b").run()
    assert not any("instead of" in w for w in _beside_chips(at))
    assert at.sidebar.selectbox(key="opt.speculative.draft").value == "llama-3.1-8b"


def test_mi300x_names_its_link_from_the_preset(app) -> None:  # type: ignore[no-untyped-def]
    at = app(gpu="mi300x", tp="8")
    assert_clean(at)
    said = " ".join(c.value for c in at.sidebar.caption)
    assert "TP 8 inside one node over infinity-fabric-mi300x" in said and "nvlink" not in said
