"""Property tests over the CLI's parsers and the pydantic specs (issue 16 §5): random text,
NaN, ±inf, negatives and huge values never give a traceback; a value out of its domain gives
exit 2 and one line, never exit 0. Kept small (a few dozen examples each) for CI."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rooflens.cli import main
from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations import parse_opt, registry
from rooflens.model.specs.presets import get_model

FAST = settings(max_examples=30, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
NASTY_NUMBERS = st.sampled_from(["nan", "inf", "-inf", "-1", "-5", "0", "1e400", "1e30", "",
                                 "99999999999999999999", " ", "1.5", "abc", "0x10"])  # fmt: skip
TEXT = st.one_of(NASTY_NUMBERS, st.text(max_size=12))
PREDICT = ["predict", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--no-ops", "--json"]
PLAN = ["plan", "--model", "llama-3-8b", "--gpus", "h100-sxm", "--tp", "1", "--rate", "1",
        "--sim-requests", "0", "--json"]  # fmt: skip


def outcome(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    code, _, err = outcome_and_output(capsys, argv)
    return code, err


def outcome_and_output(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def valid_number(text: str, lo: float, whole: bool) -> bool:
    """What argtypes.py accepts: whole numbers or finite floats in [lo, 1e9]."""
    try:
        value = int(text) if whole else float(text)
    except ValueError:
        return False
    return math.isfinite(value) and lo <= value <= 10**9


@FAST
@given(flag=st.sampled_from(["--batch", "--prompt-len", "--output-len", "--tp", "--group-size",
                             "--overhead-gb", "--prefill-chunk"]), text=TEXT)  # fmt: skip
def test_predict_numbers(capsys, flag: str, text: str) -> None:  # type: ignore[no-untyped-def]
    code, err = outcome(capsys, [*PREDICT, flag, text])
    lo = {"--overhead-gb": 0.0, "--prefill-chunk": 0}.get(flag, 1)
    if not valid_number(text, lo, flag != "--overhead-gb"):
        assert code == 2 and err.count("\n") == 1, (flag, text, err)
    else:
        assert code in (0, 2, 3)  # valid syntax: it runs, or says why not (tp 7), or misfits


@FAST
@given(flag=st.sampled_from(["--rate", "--sim-requests", "--seed", "--max-gpus", "--chunk",
                             "--ttft-slo", "--prompt-len-p99", "--kv-dtypes", "--tp",
                             "--price", "--engine"]), text=TEXT)  # fmt: skip
def test_plan_inputs(capsys, flag: str, text: str) -> None:  # type: ignore[no-untyped-def]
    argv = list(PLAN)
    if flag in argv:
        argv[argv.index(flag) + 1] = text
    else:
        argv += [flag, text]
    code, err = outcome(capsys, argv)
    assert code in (0, 2, 3)
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("error:"), (flag, text, err)
    if text in ("nan", "inf", "-inf", "-1", "-5", "", "abc", "1e400"):
        assert code == 2, (flag, text)


OPT_PARAMS = [(name, key) for name, cls in sorted(registry().items()) for key in cls.params]


@FAST
@given(pair=st.sampled_from(OPT_PARAMS), text=TEXT)
def test_every_optimization_parameter(pair: tuple[str, str], text: str) -> None:
    name, key = pair
    spec = registry()[name].params[key]
    try:
        opt = parse_opt(f"{name}:{key}={text}")
    except RooflensError as exc:
        assert "\n" not in str(exc)
        return
    value = opt[key]
    if spec.type in (int, float) and value is not None:
        assert math.isfinite(value) and spec.in_bounds(value), (name, key, text)
    if spec.type is bool:
        assert text.strip().lower() in ("true", "false", "yes", "no", "1", "0")


SPEC_FIELDS = ["n_layers", "d_model", "n_heads", "n_kv_heads", "d_ff", "vocab_size",
               "max_context", "n_experts", "sliding_window", "activation", "id"]  # fmt: skip
VALUES = st.one_of(st.just(True), st.just(math.nan), st.just(math.inf), st.integers(-10, 0),
                   st.just(10**30), st.text(max_size=6), st.floats(allow_nan=True))  # fmt: skip


@FAST
@given(field=st.sampled_from(SPEC_FIELDS), value=VALUES)
def test_model_spec_fields(field: str, value: object) -> None:
    spec = get_model("llama-2-7b")
    try:
        out = spec.model_copy(update={field: value})
    except RooflensError as exc:
        assert "\n" not in str(exc)
        return
    # accepted: it must be a sane value of the field's type
    got = getattr(out, field)
    assert not isinstance(got, bool) or field == "id"
    if isinstance(got, float | int) and not isinstance(got, bool):
        assert math.isfinite(got) and got >= 0


KERNEL_ROWS = {
    "gemm": {"op": "gemm", "m": 16, "n": 4096, "k": 4096, "dtype": "bf16", "group_size": 128,
             "weight_dtype": "int4"},
    "attention_decode": {"op": "attention_decode", "batch": 1, "kv_len": 1024, "n_heads": 32,
                         "n_kv_heads": 8, "head_dim": 128, "dtype": "bf16", "kv_dtype": "bf16"},
    "moe": {"op": "moe", "num_tokens": 16, "hidden_size": 4096, "inter_size": 14336, "topk": 2,
            "num_experts": 8, "moe_tp_size": 1, "moe_ep_size": 1, "dtype": "bf16",
            "assignments": 32, "experts_read": 8},
}  # fmt: skip
KERNEL_CELLS = [(op, c) for op, row in KERNEL_ROWS.items() for c in row if c != "op"]


@pytest.mark.slow
@FAST
@given(cell=st.sampled_from(KERNEL_CELLS), text=TEXT)
def test_kernels_predict_cells(capsys, tmp_path_factory, cell: tuple[str, str], text: str) -> None:  # type: ignore[no-untyped-def]
    op, column = cell
    path = tmp_path_factory.mktemp("k") / "in.csv"
    pd.DataFrame([{**KERNEL_ROWS[op], column: text}]).to_csv(path, index=False)
    argv = ["kernels", "predict", "--gpu", "h100-sxm", str(path)]
    code, out, err = outcome_and_output(capsys, argv)
    assert code in (0, 2), (op, column, text, err)
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("error:"), (op, column, text, err)
    else:  # accepted: every prediction is a finite, positive time
        times = pd.read_csv(io.StringIO(out))["predicted_s"]
        assert (times > 0).all() and np.isfinite(times).all(), (op, column, text)


SCENARIO_ARGS = ["batch", "prompt_len", "output_len", "tp", "pp", "ep", "group_size",
                 "overhead_bytes", "prefill_chunk_tokens", "weight_dtype", "profile"]  # fmt: skip


@FAST
@given(key=st.sampled_from(SCENARIO_ARGS), value=VALUES)
def test_make_scenario_arguments(key: str, value: object) -> None:
    from rooflens.model.predict.api import make_scenario

    try:
        sc = make_scenario("llama-2-7b", "h100-sxm", **{key: value})  # type: ignore[arg-type]
    except RooflensError as exc:
        assert "\n" not in str(exc)
        return
    numbers = [sc.workload.batch, sc.workload.prompt_len, sc.parallel.tp, sc.overhead_bytes]
    assert all(math.isfinite(n) and n >= 0 and not isinstance(n, bool) for n in numbers)
