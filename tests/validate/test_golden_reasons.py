"""Every golden change comes with a test that says why (validate/golden_reasons.py): the
committed change log names real tests, and `python -m rooflens.validate.golden --update` refuses a
move
that no entry for the committed snapshot explains."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.validate import golden
from rooflens.validate.golden_reasons import (
    Move,
    Reason,
    load_reasons,
    names_a_test,
    problems,
    snapshot_digest,
)

THIS = "tests/validate/test_golden_reasons.py"


def test_every_logged_change_names_tests_that_exist() -> None:
    reasons = load_reasons()
    assert reasons, "the change log is empty"
    for r in reasons:
        for node in r.tests:
            assert names_a_test(node), f"{r.scenarios}: {node} is not a test"


def test_names_a_test_reads_the_file() -> None:
    assert names_a_test(f"{THIS}::test_names_a_test_reads_the_file")
    assert names_a_test(f"{THIS}::test_update_refuses_unexplained_moves[x]")  # params ignored
    assert not names_a_test(f"{THIS}::test_that_was_never_written")
    assert not names_a_test("tests/validate/no_such_file.py::test_x")
    assert not names_a_test(THIS)  # a file alone proves nothing
    assert not names_a_test("validate/golden.py::snapshot")  # not under tests/


def _reason(digest: str, scenarios: list[str], fields: list[str]) -> Reason:
    return Reason(from_snapshot=digest, scenarios=tuple(scenarios), fields=tuple(fields),
                  reason="a reason long enough to say something",
                  tests=(f"{THIS}::test_names_a_test_reads_the_file",))  # fmt: skip


def test_problems_lists_what_is_unexplained() -> None:
    d = "0123456789ab"
    moved = [Move("a/x", "tpot_s", 1.0, 2.0), Move("a/x", "ops.decode.lm_head.time_s", 1.0, 3.0),
             Move("b/y", "scenario", None, 40.0)]  # fmt: skip
    assert problems(moved, [_reason(d, ["a/*"], ["tpot_s", "ops.*"]),
                            _reason(d, ["b/y"], ["*"])], d) == []  # fmt: skip
    # an entry for another snapshot, however broad, explains nothing now
    stale = [_reason("ba9876543210", ["*"], ["*"])]
    assert problems(moved, stale, d) == [f"unexplained: {m.line()}" for m in moved]
    partial = problems(moved, [_reason(d, ["a/x"], ["tpot_s"]), _reason(d, ["c"], ["*"])], d)
    assert partial == [
        "unexplained: a/x: ops.decode.lm_head.time_s 1.0 -> 3.0",
        "unexplained: b/y: scenario added",
        "explains nothing that moved: c / ('*',)",
    ]


def test_moves_name_scenarios_added_and_removed() -> None:
    old = {"s": {"ttft_s": 1.0}, "gone": {"a": 1.0, "b": 2.0}}
    new = {"s": {"ttft_s": 1.5}, "fresh": {"a": 1.0}}
    assert golden.moves(old, new) == [
        Move("fresh", "scenario", None, 1.0),
        Move("gone", "scenario", 2.0, None),
        Move("s", "ttft_s", 1.0, 1.5),
    ]
    assert golden.differences(old, new)[:2] == ["fresh: scenario added", "gone: scenario removed"]


@pytest.mark.parametrize("explained", [False, True])
def test_update_refuses_unexplained_moves(
    explained: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    snap = tmp_path / "predictions.json"
    text = json.dumps({"s": {"tpot_s": 1.0}}, indent=1, sort_keys=True) + "\n"
    snap.write_text(text)
    log = tmp_path / "golden_reasons.yaml"
    digest = snapshot_digest(text)
    entry = (f"- from_snapshot: '{digest}'\n  scenarios: [s]\n  fields: [tpot_s]\n"
             f"  reason: the kernel is faster, measured\n"
             f"  tests: ['{THIS}::test_names_a_test_reads_the_file']\n")  # fmt: skip
    log.write_text("changes:\n" + (entry if explained else ""))
    monkeypatch.setattr(golden, "GOLDEN_FILE", snap)
    monkeypatch.setattr(golden, "load_reasons", lambda: load_reasons(log))
    monkeypatch.setattr(golden, "snapshot", lambda: {"s": {"tpot_s": 0.5}})
    code = golden.main(["--update"])
    out = capsys.readouterr().out
    if explained:
        assert code == 0 and json.loads(snap.read_text()) == {"s": {"tpot_s": 0.5}}
    else:
        assert code == 2 and snap.read_text() == text  # untouched
        assert "unexplained: s: tpot_s 1.0 -> 0.5" in out
        assert f"from_snapshot: {digest}" in out  # the entry to fill in


def test_a_malformed_log_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture) -> None:  # fmt: skip
    snap = tmp_path / "predictions.json"
    snap.write_text(json.dumps({"s": {"tpot_s": 1.0}}))
    log = tmp_path / "golden_reasons.yaml"
    log.write_text("changes:\n- from_snapshot: nothex\n  scenarios: [s]\n")
    monkeypatch.setattr(golden, "GOLDEN_FILE", snap)
    monkeypatch.setattr(golden, "load_reasons", lambda: load_reasons(log))
    monkeypatch.setattr(golden, "snapshot", lambda: {"s": {"tpot_s": 0.5}})
    assert golden.main(["--update"]) == 2
    err = capsys.readouterr().err.strip()
    assert "golden_reasons.yaml entry 1" in err and "\n" not in err
