"""Traces and replays as untrusted input (issue 27 §2-3): `plan --trace` uses the exact moments
of measured lengths, refuses requests over the model's context by count, states its size limit,
and turns non-finite or absurd fields into one line naming the field; the replica simulation
refuses inputs that would never end instead of looping."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from test_sim import Linear

import rooflens.model.planner.trace as trace_module
from rooflens.cli import main
from rooflens.hardware.errors import RooflensError
from rooflens.model.planner.sim import replay
from rooflens.model.planner.trace import read_trace
from rooflens.model.planner.workload import LengthDist

PLAN = ["plan", "--gpus", "h100-sxm", "--tp", "1", "--sim-requests", "0"]


def long_tail(path: Path, longest: int) -> Path:
    """199 requests of 500 tokens and one of `longest`, 0.1 s apart."""
    rows = [{"timestamp": i * 0.1, "input_len": 500, "output_len": 100} for i in range(199)]
    rows.append({"timestamp": 20.0, "input_len": longest, "output_len": 100})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_mean_length_keeps_the_tail(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    t = read_trace(long_tail(tmp_path / "t.jsonl", 100_000))
    prompts = LengthDist(kind="empirical", samples=t.input_len)
    assert prompts.mean() == pytest.approx((199 * 500 + 100_000) / 200)  # 997.5, not 500
    assert prompts.second_moment() == pytest.approx((199 * 500**2 + 100_000**2) / 200)
    path = str(tmp_path / "t.jsonl")
    assert main([*PLAN, "--model", "llama-3.1-8b", "--trace", path]) in (0, 3)
    assert "mean 997.5 tokens" in capsys.readouterr().out.replace("\n", " ")


def test_requests_over_the_context_are_refused_by_count(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = long_tail(tmp_path / "t.jsonl", 200_000)  # mean 1,497 tokens: under 8,192
    assert main([*PLAN, "--model", "llama-3-8b", "--trace", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "1 of 200 requests" in err and "8,192" in err


@pytest.mark.parametrize(
    ("row", "named"),
    [
        ('{"timestamp": 1, "input_len": Infinity, "output_len": 5}', "input_len"),
        ('{"timestamp": 1, "input_len": 5, "output_len": NaN}', "output_len"),
        ('{"timestamp": Infinity, "input_len": 5, "output_len": 5}', "timestamp"),
        ('{"timestamp": 1, "input_len": "password=hunter2", "output_len": 5}', "input_len"),
        ('{"timestamp": 1, "input_len": 1e300, "output_len": 5}', "input_len"),
        ('{"timestamp": 1e-300, "input_len": 5, "output_len": 5}', "timestamps"),
        ('{"timestamp": 1e308, "input_len": 5, "output_len": 5}\n'
         '{"timestamp": -1e308, "input_len": 5, "output_len": 5}', "timestamps"),
        ('{"timestamp": 1, "input_len": 5, "output_len": 5, "prefix_id": "hunter2"}',
         "prefix_len"),
    ],
)  # fmt: skip
def test_bad_rows_are_one_line(tmp_path: Path, capsys, row: str, named: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t.jsonl"
    path.write_text('{"timestamp": 0, "input_len": 5, "output_len": 5}\n' + row + "\n")
    assert main([*PLAN, "--model", "llama-3-8b", "--trace", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and named in err and "hunter2" not in err, err
    assert "warning" not in err and "internal error" not in err


def test_a_trace_over_the_limit_is_refused_while_streaming(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(trace_module, "MAX_TRACE_REQUESTS", 1000)
    path = tmp_path / "big.jsonl"
    with path.open("w") as f:
        for i in range(20_000):
            f.write(f'{{"timestamp": {i}, "input_len": 5, "output_len": 5}}\n')
    with pytest.raises(RooflensError, match="more than 1,000 requests"):
        read_trace(path)


def test_a_trace_folder_is_named_as_such(tmp_path: Path) -> None:
    with pytest.raises(RooflensError, match="folder"):
        read_trace(tmp_path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"arrival": np.array([0.0, np.nan])}, "arrival times"),
        ({"concurrency": -1}, "concurrency"),
        ({"cap": 0}, "batch cap"),
        ({"outputs": np.array([5.0, np.inf])}, "output lengths"),
    ],
)
def test_the_replica_refuses_what_would_never_end(change: dict, message: str) -> None:  # type: ignore[type-arg]
    kwargs = {"arrival": np.array([0.0, 1.0]), "outputs": np.array([5.0, 5.0]), "cap": 8,
              "concurrency": None} | change  # fmt: skip
    start = time.perf_counter()
    with pytest.raises(ValueError, match=message):
        replay(Linear(const=0.01), "chunked", kwargs["arrival"], np.array([10.0, 10.0]),
               kwargs["outputs"], kwargs["cap"], 64, concurrency=kwargs["concurrency"])  # fmt: skip
    assert time.perf_counter() - start < 1


def test_progress_is_reported_and_a_pipe_is_read(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import os

    monkeypatch.setattr(trace_module, "BATCH", 50)
    path = long_tail(tmp_path / "t.jsonl", 1000)
    calls: list[tuple[int, int | None]] = []
    read_trace(path, progress=lambda done, total: calls.append((done, total)))
    assert calls[0] == (50, 200) and calls[-1] == (200, 200) and len(calls) == 4
    r, w = os.pipe()  # what `--trace /dev/stdin < trace.jsonl` reads
    assert len(path.read_bytes()) < 65536  # fits the pipe's buffer: no writer process needed
    os.write(w, path.read_bytes())
    os.close(w)
    piped = read_trace(
        f"/proc/self/fd/{r}", progress=lambda done, total: calls.append((done, total))
    )
    os.close(r)
    assert piped.input_len == read_trace(path).input_len and calls[-1] == (200, None)
