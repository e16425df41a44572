"""Property tests over the files users hand to rooflens (issue 27, "Done means"): vLLM and SGLang
benchmark results (`validate serve`), request traces (`plan --trace`) and Hugging Face configs
(`memory --model config.json`), with one field mutated, removed, non-finite, negative, huge or
of the wrong type. The contract: exit 0 with finite output, or one line on stderr with exit 2
or 3; never a hang (an alarm fails the example), a traceback or a string of the file echoed.
About 240 examples in all, each test under 3 s here (CI budget for the file: a minute)."""

from __future__ import annotations

import json
import math
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rooflens.cli import main

FAST = settings(max_examples=80, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
SECRET = "hf_SeCrEtToKeN_0123456789"
MISSING = object()
NASTY = st.sampled_from([MISSING, None, math.nan, math.inf, -math.inf, -1, 0, 1e308, 1e-300,
                         10**30, True, SECRET, [], [SECRET], [[1.0]], {}, {"a": SECRET},
                         [math.nan], [-1.0], [1e308]])  # fmt: skip
FIXTURES = Path(__file__).parents[1] / "model" / "fixtures"
SERVE = {
    "date": "20250101-000000", "backend": "vllm", "model_id": "m", "num_prompts": 3,
    "request_rate": 2.0, "burstiness": 1.0, "max_concurrency": None, "duration": 4.0,
    "completed": 3, "input_lens": [100, 200, 300], "output_lens": [3, 1, 5],
    "ttfts": [0.1, 0.2, 0.4], "itls": [[0.02, 0.04], [], [0.01, 0.01, 0.01, 0.05]],
    "errors": ["", "", ""], "start_times": [0.0, 0.5, 1.0],
}  # fmt: skip
TRACE_ROW = {"timestamp": 1.0, "input_len": 512, "output_len": 64, "prefix_id": "sys",
             "prefix_len": 100}  # fmt: skip


@contextmanager
def alarm(seconds: int) -> Iterator[None]:
    """A hang fails the example instead of the CI job."""

    def fail(*_: object) -> None:
        raise TimeoutError(f"hung for {seconds} s")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def mutated(doc: dict[str, Any], key: str, value: object) -> dict[str, Any]:
    out = dict(doc)
    if value is MISSING:
        out.pop(key, None)
    else:
        out[key] = value
    return out


def finite(value: Any) -> bool:
    if isinstance(value, dict):
        return all(finite(v) for v in value.values())
    if isinstance(value, list):
        return all(finite(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)


def check_contract(capsys: pytest.CaptureFixture[str], argv: list[str]) -> int:
    with alarm(30):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and SECRET not in err and SECRET not in out, err
    if code == 0:
        data = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the output"))
        assert finite(data)
    else:
        assert code in (2, 3), (code, err)
        assert err.count("\n") == 1 and err.startswith("error:"), err
    return code


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text)
    return str(path)


@FAST
@given(key=st.sampled_from(sorted(SERVE)), value=NASTY, sglang=st.booleans())
def test_serving_benchmark_files(capsys, tmp_path_factory, key: str, value: object,
                                 sglang: bool) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    doc = mutated(SERVE, key, value)
    if sglang:  # SGLang appends one JSON object a line; the last one is read
        doc = mutated(doc, "dataset_name", "random") | {"backend": "sglang"}
        text = json.dumps(SERVE) + "\n" + json.dumps(doc) + "\n"
    else:
        text = json.dumps(doc)
    path = write(tmp_path_factory.mktemp("s"), "result.json", text)
    check_contract(capsys, ["validate", "serve", path, "--model", "llama-3-8b", "--gpu",
                            "h100-sxm", "--json"])  # fmt: skip


@settings(FAST, max_examples=40)
@given(key=st.sampled_from(sorted(TRACE_ROW)), value=NASTY, row=st.integers(0, 3))
def test_request_traces(capsys, tmp_path_factory, key: str, value: object, row: int) -> None:  # type: ignore[no-untyped-def]
    rows = [TRACE_ROW | {"timestamp": float(i)} for i in range(4)]
    rows[row] = mutated(rows[row], key, value)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    path = write(tmp_path_factory.mktemp("t"), "trace.jsonl", text)
    check_contract(capsys, ["plan", "--model", "llama-3-8b", "--gpus", "h100-sxm", "--tp", "1",
                            "--weight-dtypes", "bf16", "--kv-dtypes", "bf16", "--trace", path,
                            "--sim-requests", "0", "--json"])  # fmt: skip


HF = {name: json.loads((FIXTURES / name / "config.json").read_text())
      for name in ("Meta-Llama-3-8B", "Qwen3-30B-A3B", "gemma-3-1b-pt", "gpt-oss-20b",
                   "DeepSeek-V3", "Jamba-v0.1")}  # fmt: skip
HF_KEYS = sorted({(name, key) for name, cfg in HF.items() for key in cfg
                  if key not in ("architectures",)})  # fmt: skip


@settings(FAST, max_examples=120)
@given(pair=st.sampled_from(HF_KEYS), value=NASTY)
def test_hugging_face_configs(capsys, tmp_path_factory, pair: tuple[str, str],
                              value: object) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    name, key = pair
    folder = tmp_path_factory.mktemp("hf")
    path = write(folder, "config.json", json.dumps(mutated(HF[name], key, value)))
    check_contract(capsys, ["memory", "--model", path, "--gpu", "h100-sxm", "--tp", "8",
                            "--json"])  # fmt: skip
