"""`rooflens validate e2e --device cuda` end to end on a GPU: graph-captured and eager decode,
torch and Triton kernels, per-operator device times. Skips without a CUDA GPU."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rooflens.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_specs import TINY

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("extra", [(), ("--no-graph",), ("--impl", "triton"), ("--compile",)])
def test_tiny_model_on_the_gpu(tmp_path, capsys, extra):
    args = [
        "validate",
        "e2e",
        "--model",
        str(TINY),
        "--device",
        "cuda",
        "--gpu",
        "h100-sxm",
        "--batch",
        "1,8",
        "--context",
        "256",
        "--json",
        "--results",
        str(tmp_path),
        *extra,
    ]
    assert main(args) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 4
    for r in rows:
        assert 0 < r["measured_q20_s"] <= r["measured_s"] <= r["measured_q80_s"] < 1.0
        ops = {o["name"]: o["measured_s"] for o in r["ops"]}
        if "--compile" not in extra:  # kernels of each operator found beneath its scope
            assert ops["mlp.up_gate"] > 0 and ops["lm_head"] > 0 and ops["attn.core"] > 0
            assert sum(ops.values()) == pytest.approx(r["measured_s"], rel=0.05)
    decode = [r for r in rows if r["phase"] == "decode"]
    assert {r["mode"] for r in decode} == (
        {"compiled"} if "--compile" in extra else {"eager" if extra else "cuda graph"}
    )


def test_llama_3_8b_with_two_layers_scales_to_the_full_depth(tmp_path, capsys):
    args = [
        "validate",
        "e2e",
        "--model",
        "llama-3-8b",
        "--device",
        "cuda",
        "--layers",
        "2",
        "--batch",
        "1",
        "--context",
        "1024",
        "--json",
        "--results",
        str(tmp_path),
    ]
    assert main(args) == 0
    rows = json.loads(capsys.readouterr().out)
    for r in rows:  # 32 layers from 2: a calibrated prediction well inside 2x
        assert 0.5 < r["predicted_s"] / r["measured_s"] < 2.0
