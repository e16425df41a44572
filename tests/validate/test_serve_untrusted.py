"""A serving benchmark's result file is user input (issue 27 §2-3): impossible data, wrong types
and non-finite numbers are one line on stderr with exit 2 that names the field and the file,
never an internal error, a library's message, a hang or a value of the file; valid files with
one-token outputs give strict JSON."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from test_serve_read import vllm_doc

from rooflens.cli import main

ARGS = ["--model", "llama-3-8b", "--gpu", "h100-sxm"]


def run_file(tmp_path: Path, capsys, doc: object, *extra: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    path = tmp_path / "result.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    start = time.perf_counter()
    code = main(["validate", "serve", str(path), *ARGS, *extra])
    assert time.perf_counter() - start < 5  # every case used to hang or ends in a second
    out, err = capsys.readouterr()
    return code, out, err


INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"burstiness": NAN, "request_rate": 2.0}, "burstiness"),  # hung
        ({"burstiness": INF}, "burstiness"),  # hung
        ({"burstiness": -1}, "burstiness"),  # "shape < 0"
        ({"max_concurrency": -1, "request_rate": "inf"}, "max_concurrency"),  # hung
        ({"max_concurrency": INF}, "max_concurrency"),  # OverflowError
        ({"max_concurrency": [2]}, "max_concurrency"),  # TypeError
        ({"start_times": [NAN, NAN, NAN]}, "start_times"),  # hung
        ({"start_times": [0.0, 1.0]}, "start_times"),  # dropped without a word
        ({"start_times": [1e308, -1e308, 0.0]}, "start_times"),  # overflow warnings
        ({"ttfts": [-0.1, 0.2, 0.4]}, "ttfts"),  # negative TPOT and concurrency
        ({"itls": [[-0.02, 0.04], [], [0.01] * 4]}, "itls"),
        ({"itls": [[[0.1]], [], []]}, "itls"),  # nested
        ({"ttfts": [0.0, 0.0, 0.0], "itls": [[0.0, 0.0], [], [0.0] * 4]}, "ttfts"),  # all zero
        ({"request_rate": NAN}, "request_rate"),
        ({"request_rate": INF}, "request_rate"),
        ({"request_rate": -INF}, "request_rate"),
        ({"request_rate": 0}, "request_rate"),  # ZeroDivisionError
        ({"output_lens": [1, 1, 5]}, "itls"),  # two gaps for a one-token output
        ({"duration": True}, "duration"),
        ({"duration": 1e308}, "duration"),
        ({"duration": 1e-300}, "duration"),  # overflow warnings
        ({"errors": 5}, "errors"),
        ({"errors": ["", ""]}, "errors"),  # "operands could not be broadcast"
        ({"input_lens": [INF, 200, 300]}, "input_lens"),
    ],
)  # fmt: skip
def test_impossible_fields_are_one_line(tmp_path: Path, capsys, change: dict, field: str) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run_file(tmp_path, capsys, vllm_doc(**change))
    assert code == 2 and err.count("\n") == 1 and err.startswith("error:"), err
    assert f"'{field}'" in err and "result.json" in err, err
    for library in ("could not be broadcast", "scale <", "validation error", "Out of range",
                    "internal error", "warning"):  # fmt: skip
        assert library not in err


def test_a_string_of_the_file_is_never_echoed(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    for field in ("request_rate", "max_concurrency", "duration", "burstiness"):
        code, _, err = run_file(tmp_path, capsys, vllm_doc(**{field: "hf_SeCrEtToKeN123"}))
        assert code == 2 and "SeCrEt" not in err and field in err


@pytest.mark.parametrize("itls", [[[], [], []], None])
def test_one_token_outputs_give_strict_json(tmp_path: Path, capsys, itls: list | None) -> None:  # type: ignore[no-untyped-def]
    doc = vllm_doc(output_lens=[1, 1, 1], itls=itls or [[], [], []])
    code, out, err = run_file(tmp_path, capsys, doc, "--json")
    assert code == 0, err
    data = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert data["measured"]["tpot_p50_s"] is None  # no second token: no TPOT
    assert data["measured"]["ttft_p50_s"] == pytest.approx(0.2)


def test_chunked_itls_are_noted_not_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_file(tmp_path, capsys, vllm_doc(output_lens=[9, 1, 5]), "--json")
    assert code == 0 and json.loads(out)["chunked"] == 1  # 2 gaps for 9 tokens: chunks of several


def test_a_utf8_bom_is_read(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run_file(tmp_path, capsys, "\ufeff" + json.dumps(vllm_doc()))
    assert code == 0, err


def test_a_folder_is_not_reported_as_missing(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["validate", "serve", str(tmp_path), *ARGS]) == 2
    err = capsys.readouterr().err
    assert "folder" in err and "not found" not in err


def test_flat_itls_are_named_not_a_numpy_message(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run_file(tmp_path, capsys, vllm_doc(itls=[0.1, 0.2, 0.3]))
    assert code == 2 and "'itls'" in err and "zero-dimensional" not in err


def test_a_serving_profile_with_nan_is_one_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    profile = tmp_path / "p.yaml"
    profile.write_text("kind: rooflens-serving-profile\nengine: vllm\nmodel: llama-3-8b\n"
                       "gpu: h100-sxm\nmode: chunked\nstep_overhead_s: .nan\nmax_batch: 32\n"
                       "measured_mean_concurrency: 4\n")  # fmt: skip
    argv = ["plan", "--model", "llama-3-8b", "--gpus", "h100-sxm", "--tp", "1", "--rate", "1",
            "--sim-requests", "0", "--serving-profile", str(profile)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "step_overhead_s" in err and "validation error" not in err
