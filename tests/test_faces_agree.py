"""The CLI and the dashboard build every scenario the same way (model/predict/api.py
`scenario_of`): over a sample of presets × optimizations they accept and refuse the same
scenarios, give the same numbers, and the dashboard puts each refusal beside the widget of the
field the error names (no text parsing)."""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import pytest

from rooflens.cli import main
from rooflens.dashboard.compute import prediction
from rooflens.dashboard.labels import LABELS, locate
from rooflens.dashboard.settings import Settings
from rooflens.hardware.errors import RooflensError
from rooflens.model.predict.request import ScenarioRequest, flag

OPTS = ((), ("sliding-window:window=4096,sinks=4",), ("flash-decoding", "paged-kv"),
        ("speculative",), ("gqa:kv_heads=3",))  # fmt: skip
SCENARIOS = [
    # the issue's case: past mistral-7b's 32k context under a window (StreamingLLM)
    {"model": "mistral-7b", "gpu": "h100-sxm", "prompt_len": 40_000},
    {"model": "llama-3-8b", "gpu": "a100-sxm-80gb", "batch": 8},
    {"model": "mixtral-8x7b", "gpu": "h100-sxm", "tp": 2, "kv_dtype": "fp8"},
    {"model": "llama-3-70b", "gpu": "h100-sxm", "tp": 3},  # refused: TP must divide the heads
    {"model": "llama-3-70b", "gpu": "h100-sxm", "tp": 4, "profile": "calibrated"},
    # refused: W8A8-FP8 needs FP8 tensor cores, which the A100 lacks (on the scheme's widget)
    {"model": "llama-3-8b", "gpu": "a100-sxm-80gb", "quant": "w8a8-fp8"},
]
SAMPLE = [(dict(s), opts) for s in SCENARIOS for opts in OPTS]


def _cli(fields: dict[str, Any]) -> tuple[int, dict[str, Any] | str]:
    words = ["predict", "--json", "--ignore-memory"]
    for name, value in fields.items():
        values = value if name == "opts" else (value,)
        for v in values:
            words += [flag(ScenarioRequest, name), str(v)]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(words)
    print(err.getvalue(), end="", file=sys.stderr)  # the warnings, to whoever listens
    return status, (json.loads(out.getvalue()) if status == 0 else err.getvalue())


def _dashboard(fields: dict[str, Any]) -> Any:
    # the dashboard's own defaults (70B, TP 4, calibrated, bf16) yield to the CLI's
    cli_defaults = {n: f.default for n, f in ScenarioRequest.model_fields.items()
                    if not f.is_required()}  # fmt: skip
    return Settings(**{**cli_defaults, **fields})


@pytest.mark.parametrize(("fields", "opts"), SAMPLE, ids=lambda v: str(v))
def test_cli_and_dashboard_accept_refuse_and_predict_alike(fields: dict, opts: tuple) -> None:
    fields = {**fields, "opts": opts}
    status, cli = _cli(fields)
    try:
        pred = prediction(_dashboard(fields))
    except RooflensError as exc:
        assert status == 2, f"the dashboard refused what the CLI accepted: {exc}"
        assert str(exc) in str(cli)  # the same one line
        field, _ = locate(exc)
        assert field == (exc.field or "model") and field in LABELS
        return
    assert status == 0, f"the CLI refused what the dashboard predicted: {cli}"
    assert isinstance(cli, dict)
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        assert getattr(pred, key) == pytest.approx(cli[key], rel=1e-12)


def test_the_sample_has_both_outcomes() -> None:
    # guards the test above against a sample that only accepts (or only refuses): past its
    # context mistral-7b is refused, unless a sliding window streams it (then a warning says so)
    issue = SCENARIOS[0]
    status, message = _cli({**issue, "opts": ()})
    assert status == 2 and "over mistral-7b's max context of 32768 tokens" in str(message)
    err = io.StringIO()
    with redirect_stderr(err):
        assert _cli({**issue, "opts": OPTS[1]})[0] == 0
    assert "warning: mistral-7b is run past its 32,768-token context" in err.getvalue()


def test_a_field_error_is_worded_as_its_widget() -> None:
    with pytest.raises(RooflensError) as err:
        prediction(_dashboard({"model": "llama-3-70b", "gpu": "h100-sxm", "tp": 3}))
    field, text = locate(err.value)
    assert field == "tp" and text.startswith(f"invalid scenario: “{LABELS['tp']}” = 3 must")


def test_the_planner_admits_what_the_cli_admits() -> None:
    # the issue's case through `rooflens plan`: refused past the context, planned under a window
    words = ["plan", "--model", "mistral-7b", "--gpus", "h100-sxm", "--rate", "0.2",
             "--prompt-len", "40000", "--sim-requests", "0", "--json"]  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        refused = main(words)
        planned = main([*words, "--opt", OPTS[1][0]])
    assert refused == 2 and "exceeds mistral-7b's max context 32768" in err.getvalue()
    assert planned == 0 and "warning: mistral-7b is run past its" in err.getvalue()
    assert json.loads(out.getvalue())["recommended"]["opts"] == OPTS[1][0]
