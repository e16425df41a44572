"""`--quant`: precision schemes as engines name them, `native` by default (issue 26 §1–§2). The
scheme sets the weights' and activations' dtypes; --weight-dtype/--act-dtype override native and
must agree with any other scheme, or the command says so in one line."""

from __future__ import annotations

import json

import pytest

from rooflens.cli import main


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["predict", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("scheme", "weights", "acts"),
    [("w4a16", "int4", "bf16"), ("w8a16", "int8", "bf16"), ("w8a8-fp8", "fp8", "fp8"),
     ("fp8-block", "fp8", "fp8"), ("smoothquant", "int8", "int8"), ("bf16", "bf16", "bf16")],
)  # fmt: skip
def test_a_scheme_sets_both_dtypes(capsys, scheme, weights, acts) -> None:  # type: ignore[no-untyped-def]
    out = _json(capsys, "--model", "llama-3-8b", "--gpu", "h100-sxm", "--quant", scheme)
    p = out["precision"]
    assert (p["weight_dtype"], p["act_dtype"], p["scheme"]) == (weights, acts, scheme)


def test_fp8_weights_run_w8a8_where_the_help_says(capsys) -> None:  # type: ignore[no-untyped-def]
    # issue 26 §1: the help promised fp8 activations with fp8 weights on GPUs with fp8 units
    out = _json(capsys, "--model", "qwen3-8b", "--gpu", "h100-sxm", "--weight-dtype", "fp8")
    assert (out["precision"]["act_dtype"], out["precision"]["scheme"]) == ("fp8", "w8a8-fp8")
    ampere = _json(capsys, "--model", "qwen3-8b", "--gpu", "a100-sxm-80gb", "--weight-dtype", "fp8")
    assert ampere["precision"]["act_dtype"] == "bf16"  # no fp8 units: weight-only


def test_a_flag_that_contradicts_the_scheme_is_refused_in_one_line(capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["predict", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--quant", "w4a16"]
    assert main([*argv, "--weight-dtype", "fp8"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --quant w4a16 (W4A16) sets --weight-dtype int4, not fp8: drop "
                   "--weight-dtype or pick another --quant"]  # fmt: skip
    assert main([*argv, "--weight-dtype", "int4", "--act-dtype", "bf16", "--json"]) == 0  # agree


def test_native_keeps_gpt_oss_mxfp4_experts_and_says_so(capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["--model", "gpt-oss-20b", "--gpu", "h100-sxm"]
    native = _json(capsys, *argv)
    assert native["precision"]["expert_weight_dtype"] == "mxfp4" and native["precision"]["native"]
    bf16 = _json(capsys, *argv, "--quant", "bf16")
    # MXFP4 is 4.25 bits against 16; the experts are 24 layers × 32 × 3 × 2880 × 2880 = 19.1 B
    saved = bf16["memory"]["weights_bytes"] - native["memory"]["weights_bytes"]
    assert saved == pytest.approx(19.1e9 * (2 - 4.25 / 8), rel=0.03)
    assert main(["predict", *argv, "--no-ops"]) == 0
    assert "precision native: MXFP4 experts, bf16 attention" in capsys.readouterr().out


def test_deepseek_native_is_block_fp8(capsys) -> None:  # type: ignore[no-untyped-def]
    out = _json(capsys, "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8")
    assert out["precision"]["scheme"] == "fp8-block" and out["precision"]["act_dtype"] == "fp8"
    assert out["profile"] == "calibrated"
    # an H200 has no measurements of its own: it takes the H100's terms (the same SM)
    assert out["priced_by"] == (
        "calibrated profile, vLLM kernels, terms of h100-sxm, the same SM design"
    )


def test_the_planner_names_precision_as_the_sidebar_does():
    # issue 26 §1: the planner's "fp8 weights" are W8A8-FP8 where the GPU has fp8 units (the
    # activations it prices), and its tables say so in the same words as the sidebar and CLI
    from rooflens.model.planner.explain import describe
    from rooflens.model.planner.space import act_dtype
    from rooflens.model.specs.quant import precision_label

    assert precision_label("fp8", act_dtype("h100-sxm", "fp8"), "fp8") == "W8A8-FP8, fp8 KV"
    assert precision_label("int4", act_dtype("h100-sxm", "int4"), "bf16") == "W4A16, bf16 KV"
    assert act_dtype("a100-sxm-80gb", "fp8") == "bf16"  # no fp8 units: weight-only
    row = {"tp": 1, "ep": 1, "pp": 1, "mode": "chunked", "replicas": 1, "n_gpus": 1,
           "gpu": "h100-sxm", "weight_dtype": "fp8", "act_dtype": "fp8", "kv_dtype": "bf16",
           "batch": 8}  # fmt: skip
    assert "W8A8-FP8, bf16 KV" in describe(row)


# What a user passes to the engine, read as the scheme it is: vLLM's and SGLang's --quantization
# method names and TensorRT-LLM's QuantAlgo names (their own docs), any case, '_' or '-'.
@pytest.mark.parametrize(
    ("engine_name", "scheme"),
    [("fp8", "w8a8-fp8"), ("FP8", "w8a8-fp8"), ("w8a8_fp8", "w8a8-fp8"), ("modelopt", "w8a8-fp8"),
     ("FP8_BLOCK_SCALES", "fp8-block"), ("awq", "w4a16"), ("awq_marlin", "w4a16"),
     ("gptq_marlin", "w4a16"), ("W4A16_AWQ", "w4a16"), ("W8A16_GPTQ", "w8a16"),
     ("w8a8_int8", "smoothquant"), ("W8A8_SQ_PER_CHANNEL", "smoothquant"),
     ("modelopt_fp4", "nvfp4"), ("NVFP4", "nvfp4"), ("W4A16_MXFP4", "mxfp4"), ("BF16", "bf16")],
)  # fmt: skip
def test_the_engines_names_for_a_scheme_are_read_as_it(capsys, engine_name, scheme) -> None:  # type: ignore[no-untyped-def]
    argv = ("--model", "llama-3-8b", "--gpu", "b300", "--batch", "4")
    named = _json(capsys, *argv, "--quant", engine_name)
    ours = _json(capsys, *argv, "--quant", scheme)
    assert named["precision"]["scheme"] == scheme
    assert (named["tpot_s"], named["ttft_s"]) == (ours["tpot_s"], ours["ttft_s"])


def test_a_name_no_engine_gives_is_refused_in_one_line_on_every_face(capsys) -> None:  # type: ignore[no-untyped-def]
    from rooflens.dashboard.settings import from_query

    with pytest.raises(SystemExit) as exit_:  # argparse's choice check
        main(["predict", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--quant", "int4"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1
    assert "invalid choice: 'int4'" in err[0] and "w4a16" in err[0]
    settings, problems = from_query({"quant": ["awq_marlin"]})  # a link, as a user shares it
    assert settings.quant == "w4a16" and problems == []
    settings, problems = from_query({"quant": ["int4"]})
    assert settings.quant == "native" and len(problems) == 1 and "'int4'" in problems[0]
