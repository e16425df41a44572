"""`plan --trace`: reading request traces, their one-line errors, and the plan they give (the
analytical model reads the trace's rate and lengths; the simulation replays its times)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import rooflens.cli as cli
from rooflens.hardware.errors import RooflensError
from rooflens.model.planner.check import simulate_row
from rooflens.model.planner.plan import plan
from rooflens.model.planner.plan_args import build_request
from rooflens.model.planner.trace import read_trace

SPACE = dict(model="llama-3-8b", gpus="h100-sxm", tp="1", weight_dtypes="bf16", kv_dtypes="bf16",
             ttft_slo=1.0, tpot_slo=0.05)  # fmt: skip


def write_trace(path: Path, times: np.ndarray, inputs: object = 512, outputs: object = 128,
                prefixes: list[tuple[str, int]] | None = None) -> Path:  # fmt: skip
    with path.open("w") as f:
        for i, t in enumerate(times):
            row = {"timestamp": float(t), "input_len": inputs, "output_len": outputs}
            if prefixes:
                row.update(prefix_id=prefixes[i][0], prefix_len=prefixes[i][1])
            f.write(json.dumps(row) + "\n")
    return path


def test_read_sorts_and_measures_the_rate(tmp_path: Path) -> None:
    t = read_trace(write_trace(tmp_path / "t.jsonl", np.array([10.0, 12.0, 11.0, 14.0])))
    assert t.timestamp_s == (0.0, 1.0, 2.0, 4.0)
    assert t.rate_per_s == pytest.approx(3 / 4.0)


def test_prefix_hit_rate_counts_repeats_only(tmp_path: Path) -> None:
    prefixes = [("a", 100), ("a", 100), ("b", 200), ("a", 100), ("", 0)]
    t = read_trace(write_trace(tmp_path / "t.jsonl", np.arange(5.0), 400, 10, prefixes))
    # the 2nd and 4th 'a' hit 100 tokens each; of 5 × 400 prompt tokens
    assert t.prefix_hit_rate() == pytest.approx(200 / 2000)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"timestamp": 0, "input_len": 5}', '{"timestamp": 1}'], "line 1: missing 'output_len'"),
        (['{"timestamp": 0, "input_len": 5.5, "output_len": 1}'] * 2, "whole number"),
        (['{"timestamp": 0, "input_len": 5, "output_len": 0}'] * 2, "output_len must be a whole"),
        (['{"timestamp": 0, "input_len": 5, "output_len": 1, "prefix_id": "a", '
          '"prefix_len": 9}'] * 2, "exceeds input_len"),
        (['{"timestamp": 0, "input_len": 5, "output_len": 1, "prefix_len": 2}'] * 2, "prefix_id"),
        (['{"timestamp": 0, "input_len": 5, "output_len": 1, "prefix_id": "a"}'] * 2,
         "prefix_len"),
        (['{"timestamp": 0, "input_len": 5, "output_len": 1}'], "at least two"),
        (['{"timestamp": 3, "input_len": 5, "output_len": 1}'] * 2, "same"),
        (["[1, 2]", "x"], "line 1: not a JSON object"),
        (['{"timestamp": "soon", "input_len": 5, "output_len": 1}'] * 2, "line 1"),
    ],
)  # fmt: skip
def test_bad_traces_get_one_line(tmp_path: Path, lines: list[str], message: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RooflensError, match=message) as err:
        read_trace(path)
    assert "\n" not in str(err.value)


def test_evenly_spaced_trace_plans_like_its_rate(tmp_path: Path) -> None:
    # a trace of fixed lengths at exact 1/λ spacing is the load `--rate λ` describes, so the
    # analytical sweep must give the same recommendation and metrics
    rate = 6.0
    path = write_trace(tmp_path / "t.jsonl", np.arange(400) / rate)
    a = plan(*build_request(**SPACE, trace=str(path)), simulate_requests=0, explain=False)
    b = plan(*build_request(**SPACE, rate=rate), simulate_requests=0, explain=False)
    assert a.workload.rate_per_s == pytest.approx(rate)
    ra, rb = a.recommended, b.recommended
    assert ra is not None and rb is not None
    assert (ra["n_gpus"], ra["mode"], ra["batch"]) == (rb["n_gpus"], rb["mode"], rb["batch"])
    for key in ("ttft_p99_s", "tpot_p99_s", "cost_per_hour"):
        assert ra[key] == pytest.approx(rb[key], rel=1e-9), key


def test_simulation_replays_bursts(tmp_path: Path) -> None:
    # the same mean rate, once evenly spaced and once in bursts of 40 at once: the bursts
    # queue, so the simulated TTFT p99 is far higher; Poisson sits in between
    n, rate = 1200, 4.0
    even = write_trace(tmp_path / "even.jsonl", np.arange(n) / rate)
    bursts = write_trace(tmp_path / "bursts.jsonl", np.repeat(np.arange(n // 40) * 40 / rate, 40))
    space, w_even = build_request(**SPACE, trace=str(even))
    _, w_burst = build_request(**SPACE, trace=str(bursts))
    _, w_poisson = build_request(**SPACE, rate=w_burst.rate_per_s)
    p = plan(space, w_even, simulate_requests=0, explain=False)
    assert p.recommended is not None
    row = {**p.recommended, "mode": "colocated", "decode_replicas": 1, "batch": 64}
    c = next(iter(p.sweep.curves.values()))
    sims = [simulate_row(c, row, w, 2048, n) for w in (w_even, w_poisson, w_burst)]
    ttft = [s.ttft_p99_s for s in sims]
    assert ttft[0] < ttft[1] < ttft[2]
    assert ttft[2] > 5 * ttft[0]


def test_cli_trace_conflicts_exit_2(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = write_trace(tmp_path / "t.jsonl", np.arange(10.0))
    for extra, flag in ((["--rate", "3"], "--rate"), (["--prompt-len", "100"], "--prompt-len")):
        code = cli.main(["plan", "--model", "llama-3-8b", "--trace", str(path), *extra])
        assert code == 2 and f"{flag} and --trace" in capsys.readouterr().err
    assert cli.main(["plan", "--model", "llama-3-8b"]) == 2
    assert "--trace FILE" in capsys.readouterr().err
