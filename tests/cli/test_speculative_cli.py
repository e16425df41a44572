"""`rooflens predict --opt speculative` (issue 26 §3): a draft that cannot draft for the target
is refused in one line, and the operator table of a speculative decode shows the draft steps and
the verify step that make up one iteration instead of an empty "mean decode step" table."""

from __future__ import annotations

import json

import pytest

from rooflens.cli import main
from rooflens.model.optimizations._drafting import expected_tokens
from rooflens.model.specs.params import count_params
from rooflens.model.specs.presets import get_model

TARGET = ["--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_an_iteration_lists_draft_steps_then_the_verify_step(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "predict", *TARGET, "--opt", "speculative")
    assert code == 0
    assert "Operators, mean decode step" not in out
    table = out.split("one decode iteration")[1]
    rows = [line for line in table.splitlines() if line.startswith("│")]
    names = [row.split("│")[1].strip() for row in rows]
    drafts = [n for n in names if n.startswith("draft · ")]
    verifies = [n for n in names if n.startswith("verify · ")]
    assert drafts and verifies and len(drafts) + len(verifies) == len(names)
    assert names.index(verifies[0]) == len(drafts)  # the drafts come first
    assert "draft · lm_head" in drafts and "verify · lm_head" in verifies


def test_the_iteration_rows_add_up_to_tau_tokens_of_tpot(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # one iteration yields τ = (1 − α^(γ+1)) / (1 − α) tokens (Leviathan et al. 2023), so its
    # rows (draft steps + verify step, priced at the mean position) cost τ · TPOT
    code, out, _ = _run(capsys, "predict", *TARGET, "--opt", "speculative:gamma=4,alpha=0.8",
                        "--json")  # fmt: skip
    assert code == 0
    pred = json.loads(out)
    iteration_s = sum(op["time_s"] for op in pred["ops"] if op["phase"] != "prefill")
    tau = sum(0.8**i for i in range(5))
    assert tau == pytest.approx(expected_tokens(0.8, 4))
    assert iteration_s == pytest.approx(tau * pred["tpot_s"], rel=1e-3)


def test_a_draft_that_cannot_draft_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # gpt-oss-20b drafted by codellama-34b: another tokenizer and a larger model
    target, draft = get_model("gpt-oss-20b"), get_model("codellama-34b")
    assert draft.vocab_size != target.vocab_size
    assert count_params(draft).total > count_params(target).total
    code, out, err = _run(capsys, "predict", "--model", "gpt-oss-20b", "--gpu", "h100-sxm",
                          "--opt", "speculative:draft=codellama-34b")  # fmt: skip
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line
    assert "codellama-34b cannot draft for gpt-oss-20b: another tokenizer" in line
    assert "not smaller" in line


def test_a_speculation_that_does_not_pay_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    # at batch 192 the verify step of γ + 1 = 5 tokens is compute-bound: slower than plain
    code, out, _ = _run(capsys, "predict", *TARGET, "--batch", "192", "--opt", "speculative",
                        "--no-ops", "--json")  # fmt: skip
    pred = json.loads(out)
    plain_code, plain_out, _ = _run(capsys, "predict", *TARGET, "--batch", "192", "--json")
    assert code == plain_code == 0
    assert pred["tpot_s"] > json.loads(plain_out)["tpot_s"]
    assert any("slower than plain decoding" in n for n in pred["notes"])
