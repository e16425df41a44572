"""Reading serving benchmark results (vLLM JSON, SGLang JSONL): detection, one-line rejections,
and the measured metrics against hand-computed values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.validate.serve import arrivals, measured, read_result

DATA = Path(__file__).parent / "serve_data"


def vllm_doc(**extra: object) -> dict:
    """Three requests as vllm/benchmarks/serve.py saves them with --save-detailed."""
    doc = {
        "date": "20250101-000000", "backend": "vllm", "model_id": "m", "num_prompts": 3,
        "request_rate": 2.0, "burstiness": 1.0, "max_concurrency": None, "duration": 4.0,
        "completed": 3, "input_lens": [100, 200, 300], "output_lens": [3, 1, 5],
        "ttfts": [0.1, 0.2, 0.4], "itls": [[0.02, 0.04], [], [0.01, 0.01, 0.01, 0.05]],
        "errors": ["", "", ""],
    }  # fmt: skip
    doc.update(extra)
    return doc


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_detects_both_simulated_examples() -> None:
    v = read_result(DATA / "vllm_simulated.json")
    s = read_result(DATA / "sglang_simulated.jsonl")
    assert (v.engine, s.engine) == ("vllm", "sglang")
    assert v.start_times_s is not None and v.request_rate == 12.0
    assert s.request_rate is None and s.max_concurrency == 48
    # the files say they are simulated, not measured
    for name in ("vllm_simulated.json", "sglang_simulated.jsonl"):
        assert "NOT a measurement" in (DATA / name).read_text()


def test_measured_metrics_by_hand(tmp_path: Path) -> None:
    r = read_result(write(tmp_path, "r.json", json.dumps(vllm_doc())))
    m = measured(r, ttft_slo_s=0.3, tpot_slo_s=0.025)
    # TPOT = Σ ITL / (O − 1): 0.06/2 = 0.03 and 0.08/4 = 0.02 (one-token output: none)
    assert m["tpot_p50_s"] == pytest.approx(0.025)
    assert m["ttft_p50_s"] == pytest.approx(0.2)
    assert m["request_throughput_per_s"] == pytest.approx(3 / 4.0)
    assert m["output_tokens_per_s"] == pytest.approx(9 / 4.0)
    assert m["total_tokens_per_s"] == pytest.approx((600 + 9) / 4.0)
    # SLO TTFT ≤ 0.3 s and TPOT ≤ 25 ms: request 2 (one token, TTFT 0.2) only; 1 misses
    # TPOT (30 ms), 3 misses TTFT (0.4 s)
    assert m["goodput_requests_per_s"] == pytest.approx(1 / 4.0)
    # Little's law: Σ latency / duration = (0.16 + 0.2 + 0.48) / 4
    assert m["mean_concurrency"] == pytest.approx(0.84 / 4.0)
    # pooled ITLs: 0.01 ×3, 0.02, 0.04, 0.05 -> median is the 4th smallest of 6 at q = 50 %
    assert m["itl_p50_s"] in (0.01, 0.02)


def test_failed_requests_are_left_out(tmp_path: Path) -> None:
    doc = vllm_doc(errors=["", "timeout", ""], output_lens=[3, 0, 5])
    r = read_result(write(tmp_path, "r.json", json.dumps(doc)))
    assert r.input_lens.tolist() == [100, 300] and r.n_failed == 1


def test_arrival_patterns(tmp_path: Path) -> None:
    rate = read_result(write(tmp_path, "a.json", json.dumps(vllm_doc())))
    sent, conc, how = arrivals(rate)
    assert conc is None and "2 requests/s" in how and np.all(np.diff(sent) >= 0)
    closed = read_result(
        write(tmp_path, "b.json", json.dumps(vllm_doc(request_rate="inf", max_concurrency=2)))
    )
    sent, conc, how = arrivals(closed)
    assert conc == 2 and not sent.any() and "at most 2 in flight" in how
    starts = read_result(write(tmp_path, "c.json", json.dumps(vllm_doc(start_times=[5, 7, 6]))))
    assert arrivals(starts)[0].tolist() == [0, 1, 2]  # sorted, from the first send


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json at all", "neither"),
        ('{"dataset_name": "random"}\n{"x": 1}', "neither"),
        (json.dumps({k: v for k, v in vllm_doc().items() if k != "itls"}), "--save-detailed"),
        (json.dumps({"backend": "sglang", "dataset_name": "random", "duration": 1}),
         "--output-details"),
        (json.dumps(vllm_doc(request_rate="trace")), "plan --trace"),
        (json.dumps(vllm_doc(output_lens=[1, 2])), "one length"),
        (json.dumps(vllm_doc(duration=0)), "duration"),
        (json.dumps(vllm_doc(request_rate="fast")), "request_rate"),
    ],
)  # fmt: skip
def test_bad_files_get_one_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(RooflensError, match=message) as err:
        read_result(write(tmp_path, "bad.json", text))
    assert "\n" not in str(err.value)


def test_missing_file() -> None:
    with pytest.raises(RooflensError, match="not found"):
        read_result("/no/such/result.json")
