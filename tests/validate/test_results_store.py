"""The results store: atomic CSVs with provenance columns, read back per device."""

from __future__ import annotations

import pandas as pd
import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.validate.store import PROVENANCE_COLUMNS, git_commit, load_results, write_results


def test_write_then_load_keeps_rows_and_provenance(tmp_path):
    frame = pd.DataFrame({"op": ["gemm"], "m": [1], "n": [2], "k": [3], "dtype": ["fp32"],
                          "measured_s": [1e-3], "impl": ["torch:mm"]})  # fmt: skip
    info = {"device_name": "Test GPU", "driver": "1.0", "cuda": "12.4", "torch": "2.5",
            "triton": "3.1", "git_commit": "abc", "date": "2026-01-01"}  # fmt: skip
    path = write_results(frame, "test-gpu", "run1", info, tmp_path)
    assert path == tmp_path / "test-gpu" / "run1.csv"
    assert not list(path.parent.glob("*.tmp"))  # nothing half-written left behind
    back = load_results("test-gpu", tmp_path)
    assert back.loc[0, "measured_s"] == pytest.approx(1e-3)
    for column in PROVENANCE_COLUMNS:
        assert str(back.loc[0, column]) == info[column]
    assert back.loc[0, "run"] == "run1"


def test_bad_device_names_and_empty_tables_are_refused(tmp_path):
    with pytest.raises(RooflensError, match="lowercase"):
        write_results(pd.DataFrame({"a": [1]}), "../etc", "r", {}, tmp_path)
    with pytest.raises(RooflensError, match="empty"):
        write_results(pd.DataFrame(), "cpu", "r", {}, tmp_path)
    assert load_results("nothing-here", tmp_path).empty


def test_git_commit_is_a_hash():
    commit = git_commit()
    assert commit == "unknown" or len(commit.split("+")[0]) == 40


def test_a_given_commit_wins_over_the_copys_git_folder(monkeypatch):
    # on a lent GPU machine the tree is a copy whose git folder names another commit: the one
    # the caller states is the one the results were made with
    monkeypatch.setenv("ROOFLENS_COMMIT", "fb1837e6d975")
    assert git_commit() == "fb1837e6d975"
    monkeypatch.delenv("ROOFLENS_COMMIT")
    assert git_commit() != "fb1837e6d975"
