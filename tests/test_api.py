"""The Python API (rooflens/api.py, docs/api.md): the docs' worked example runs as written,
`import rooflens` stays light, and each function agrees with the CLI command it stands for."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

import rooflens
from rooflens.cli import main

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def test_the_docs_worked_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 5  # predict, memory, compare, plan, validate_kernels, errors
    namespace: dict[str, object] = {}
    with redirect_stdout(io.StringIO()):
        for block in blocks:
            exec(compile(block, str(DOC), "exec"), namespace)  # its asserts are the checks


def test_import_rooflens_is_light() -> None:
    code = ("import sys, rooflens; print([m for m in ('torch', 'triton', 'streamlit', 'pandas', "
            "'plotly', 'rooflens.model') if m in sys.modules])")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_public_name_resolves_and_an_unknown_one_does_not() -> None:
    assert sorted(rooflens.__all__) == sorted(rooflens._WHERE)
    for name in rooflens.__all__:
        assert getattr(rooflens, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rooflens.nope  # noqa: B018


def _cli_json(*words: str) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main([*words, "--json"]) == 0
    return json.loads(out.getvalue())


def test_predict_gives_the_cli_numbers() -> None:
    fields = {"batch": 4, "prompt_len": 1024, "output_len": 64, "kv_dtype": "fp8",
              "opts": ["sliding-window:window=512"]}  # fmt: skip
    pred = rooflens.predict("llama-3-8b", "h100-sxm", **fields)
    cli = _cli_json("predict", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "4",
                    "--prompt-len", "1024", "--output-len", "64", "--kv-dtype", "fp8",
                    "--opt", "sliding-window:window=512")  # fmt: skip
    for key in ("ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s"):
        assert pred.to_dict()[key] == pytest.approx(cli[key], rel=1e-12)
    assert len(pred.to_frame()) == len(cli["ops"]) == len(pred.to_dict()["ops"])


def test_memory_gives_the_cli_numbers_and_its_parts_add_up() -> None:
    # `rooflens memory --context C` sizes prompt C with one output token
    mem = rooflens.memory("llama-3-70b", "a100-sxm-80gb", tp=2, prompt_len=4096, output_len=1)
    cli = _cli_json("memory", "--model", "llama-3-70b", "--gpu", "a100-sxm-80gb", "--tp", "2",
                    "--context", "4096")  # fmt: skip
    cli_memory = cli.get("memory", cli)
    assert mem.total_bytes == pytest.approx(cli_memory["total_bytes"], rel=1e-12)
    parts = mem.to_frame().set_index("part")["bytes"]
    summed = parts[["weights", "kv_cache", "activation", "overhead", "extra"]].sum()
    assert parts["total"] == pytest.approx(summed, rel=1e-12)


def test_compare_gives_the_cli_stages() -> None:
    waterfall = rooflens.compare("llama-3-8b", "h100-sxm", batch=8)
    cli = _cli_json("compare", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "8")
    assert [s["stage"] for s in waterfall.to_dict()["stages"]] == [s["stage"] for s in cli]
    assert list(waterfall.to_frame()["tpot_s"]) == pytest.approx([s["tpot_s"] for s in cli])


def test_bad_input_is_the_cli_message_with_its_field() -> None:
    with pytest.raises(rooflens.RooflensError) as err:
        rooflens.predict("llama-3-8b", "h100-sxm", batch=0)
    assert err.value.field == "batch" and str(err.value) == "--batch must be ≥ 1, got 0"
    with pytest.raises(rooflens.RooflensError, match=r"did you mean batch\?"):
        rooflens.predict("llama-3-8b", "h100-sxm", bacth=2)
