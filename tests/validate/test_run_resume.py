"""An interrupted validation keeps every measured row, a re-run resumes where it stopped, the
store holds no absolute paths, and compare/report skip files that are not results tables
(issue 16, part 2)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.validate.runner import run_suite
from rooflens.validate.store import RunWriter, load_results
from rooflens.validate.suite import cpu_suite

INFO = {"device_name": "Test CPU", "driver": "n/a", "cuda": "n/a", "torch": "2.5",
        "triton": "3.1", "git_commit": "abc", "date": "2026-01-01"}  # fmt: skip


def _fake_timer(measured: list[str]):  # type: ignore[no-untyped-def]
    """run_suite's CPU timer replaced by a counter: the loop, not the timing, is under test."""

    def timer(calls):  # type: ignore[no-untyped-def]
        measured.append("x")
        return {"measured_s": 1e-3 * len(measured), "q20_s": 1e-3, "q80_s": 2e-3, "timing": "t"}

    return timer


def _run(writer: RunWriter, suite: pd.DataFrame, stop_after: int | None = None) -> int:
    measured: list[str] = []
    batches = []

    def sink(batch: list[dict[str, object]]) -> None:
        writer.append(batch)
        batches.append(batch)
        if stop_after is not None and len(batches) == stop_after:
            raise KeyboardInterrupt

    import rooflens.validate.runner as runner

    original = runner.time_cpu
    runner.time_cpu = lambda calls, min_time_s=0.2: _fake_timer(measured)(calls)  # type: ignore[assignment]
    try:
        run_suite(suite, "cpu", ("torch",), skip=writer.done, sink=sink)
    finally:
        runner.time_cpu = original
    return len(measured)


def test_ctrl_c_keeps_rows_and_a_rerun_resumes(tmp_path: Path) -> None:
    suite = cpu_suite()
    spec = tmp_path / "cpu" / "spec.yaml"
    writer = RunWriter("cpu", "quick", INFO, tmp_path, str(spec))
    with pytest.raises(KeyboardInterrupt):
        _run(writer, suite, stop_after=2)
    kept = pd.read_csv(writer.path)
    assert len(kept) == 2  # the two batches measured before Ctrl-C are on disk
    assert set(kept["gpu"]) == {"cpu/spec.yaml"}  # relative to the store, not absolute
    assert not any(str(tmp_path) in str(v) for v in kept.to_numpy().ravel())

    again = RunWriter("cpu", "quick", INFO, tmp_path, str(spec))
    assert again.resumed == 2
    assert _run(again, suite) == len(suite) - 2  # only the rows not yet measured
    path = again.finish()
    stored = pd.read_csv(path)
    assert len(stored) == len(suite) and not again.path.exists()
    assert len(stored.drop(columns=["measured_s"]).drop_duplicates()) == len(suite)

    fresh = RunWriter("cpu", "quick", INFO, tmp_path, str(spec), fresh=True)
    assert fresh.resumed == 0


def test_a_moved_store_still_finds_its_cpu_spec(tmp_path: Path) -> None:
    writer = RunWriter("cpu", "quick", INFO, tmp_path / "a", str(tmp_path / "a/cpu/spec.yaml"))
    writer.append([{"op": "gemm", "m": 1, "n": 2, "k": 3, "dtype": "fp32", "impl": "torch:mm",
                    "measured_s": 1e-3}])  # fmt: skip
    writer.finish()
    (tmp_path / "a" / "cpu" / "spec.yaml").write_text("id: x\n")
    (tmp_path / "a").rename(tmp_path / "b")
    back = load_results("cpu", tmp_path / "b")
    assert back.loc[0, "gpu"] == str(tmp_path / "b" / "cpu" / "spec.yaml")


def test_resuming_on_another_device_is_refused(tmp_path: Path) -> None:
    writer = RunWriter("cpu", "quick", INFO, tmp_path, "cpu")
    writer.append([{"op": "gemm", "m": 1, "impl": "torch:mm", "measured_s": 1e-3}])
    with pytest.raises(RooflensError, match="--fresh"):
        RunWriter("cpu", "quick", {**INFO, "device_name": "Other CPU"}, tmp_path, "cpu")


def test_broken_result_files_are_skipped_with_a_line_naming_each(tmp_path: Path) -> None:
    folder = tmp_path / "dev"
    folder.mkdir()
    good = pd.DataFrame({"op": ["gemm"], "m": [1], "n": [2], "k": [3], "dtype": ["fp32"],
                         "impl": ["torch:mm"], "measured_s": [1e-3],
                         "gpu": ["h100-sxm"]})  # fmt: skip
    good.to_csv(folder / "good.csv", index=False)
    (folder / "empty.csv").write_text("")
    (folder / "foreign.csv").write_text("name,score\nalice,3\n")
    text = good.to_csv(index=False)
    (folder / "truncated.csv").write_text(text + "gemm,1,2,3,fp32,torch:mm")
    (folder / "binary.csv").write_bytes(b"\xff\xfe\x00garbage\x00")
    heard: list[str] = []
    back = load_results("dev", tmp_path, on_skip=heard.append)
    assert list(back["run"]) == ["good"]
    assert len(heard) == 4 and all("\n" not in h for h in heard)
    for name in ("empty.csv", "foreign.csv", "truncated.csv", "binary.csv"):
        assert sum(name in h for h in heard) == 1


def test_a_shared_folder_with_broken_files_warns_once_per_file(measured_dir, tmp_path, capsys):  # type: ignore[no-untyped-def]
    from rooflens.cli import main

    good = measured_dir / "vidur/compute/a100/microsoft/phi-2/mlp.csv"
    base = tmp_path / "vidur/compute/a100"
    for name, text in (("good", good.read_text()), ("empty", ""),
                       ("foreign", "name,score\nalice,3\n"),
                       ("truncated", good.read_text().splitlines()[0][:40] + "\n")):  # fmt: skip
        (base / "org" / name).mkdir(parents=True)
        (base / "org" / name / "mlp.csv").write_text(text)
    gemm = tmp_path / "aiconfigurator-x/gemm/vllm/0/gemm_perf.parquet"
    gemm.parent.mkdir(parents=True)
    gemm.write_bytes(b"PAR1 not really")
    assert main(["validate", "compare", "--measured", str(tmp_path), "--json"]) == 0
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 4 and all(line.startswith("warning: skipping ") for line in lines)
    for name in ("empty/mlp.csv", "foreign/mlp.csv", "truncated/mlp.csv", "gemm_perf.parquet"):
        assert sum(name in line for line in lines) == 1
    assert "phi-2" not in err and out.strip().startswith("[")  # the good file still counts


def test_every_row_is_stored_before_it_is_printed(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 26 §7: with two impls per suite row, the first impl's row used to be printed while
    it waited for its sibling to be stored; a Ctrl-C between the two lost a row on screen."""
    import rooflens.validate.runner as runner

    monkeypatch.setattr(runner, "make_calls", lambda row, impl, device, copies: [])
    suite = cpu_suite().head(3)
    writer = RunWriter("cpu", "quick", INFO, tmp_path, "cpu")
    printed: list[str] = []
    stored_when_printed: list[int] = []

    def progress(line: str) -> None:
        printed.append(line)
        stored_when_printed.append(len(pd.read_csv(writer.path)))

    timer = _fake_timer([])
    runner.collect_rows(suite, ("triton", "torch"), "cpu", timer, 0.0, 1e9, progress,
                        None, writer.append)  # fmt: skip
    assert len(printed) == 2 * len(suite)
    # the k-th line printed finds k rows on disk: its own row is already stored
    assert stored_when_printed == list(range(1, len(printed) + 1))
