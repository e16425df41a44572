"""Presets run in the dtype their checkpoint ships in unless the user names another
(DeepSeek-V3's released weights are FP8; config.json quantization_config says so)."""

from __future__ import annotations

import json

import pytest

from rooflens.cli import main
from rooflens.model.predict.api import make_scenario
from rooflens.model.predict.memory import linear_params_per_gpu, weights_bytes_per_gpu
from rooflens.model.specs.params import count_params, router_params
from rooflens.model.specs.presets import get_model


def test_deepseek_v3_defaults_to_fp8_weights_and_w8a8_where_the_gpu_has_fp8_units() -> None:
    assert get_model("deepseek-v3").native_weight_dtype == "fp8"
    hopper = make_scenario("deepseek-v3", "h200", tp=8)
    assert (hopper.precision.weight_dtype, hopper.precision.act_dtype) == ("fp8", "fp8")
    assert hopper.precision.kv_dtype == "bf16"  # vLLM kv_cache_dtype "auto"
    ampere = make_scenario("deepseek-v3", "a100-sxm-80gb", tp=8)  # no fp8 units: W8A16
    assert (ampere.precision.weight_dtype, ampere.precision.act_dtype) == ("fp8", "bf16")


def test_an_explicit_dtype_still_wins_and_halves_to_bf16_by_the_byte_ratio() -> None:
    native = make_scenario("deepseek-v3", "h200", tp=8)
    bf16 = make_scenario("deepseek-v3", "h200", tp=8, weight_dtype="bf16")
    assert bf16.precision.weight_dtype == "bf16" and bf16.precision.act_dtype == "bf16"
    # only the linear layers change: 1 byte instead of 2 per parameter; the MoE routers stay
    # 16-bit (engines keep the gate unquantized, model/ops/ffn_block.py), whole on every GPU;
    # and FP8 stores MLA's absorbed W_UK / W_UV a second time, 16-bit, for decode's bmm
    # (model/predict/memory.py absorbed_copy_params_per_gpu: 61 x 512 x 128 x 256 / TP 8)
    saved = weights_bytes_per_gpu(bf16) - weights_bytes_per_gpu(native)
    routers = count_params(bf16.model).n_moe_layers * router_params(bf16.model)
    copies = 61 * 512 * 128 * (128 + 128) / 8 * 2
    assert saved == pytest.approx(linear_params_per_gpu(bf16) - routers - copies, rel=1e-12)
    # fp8 weights run W8A8 where the GPU has fp8 units, as --act-dtype's help says (issue 26 §1).
    # DeepSeek-V3's fp8 weights are its checkpoint, stored with 128-block scales: an engine
    # loads them as they are (quant.py keeps_block_scales), so naming the dtype alone (as the
    # planner's --weight-dtypes does) keeps FP8-block; per-tensor scales are asked for by name
    explicit = make_scenario("deepseek-v3", "h200", tp=8, weight_dtype="fp8")
    assert (explicit.precision.act_dtype, explicit.precision.scheme) == ("fp8", "fp8-block")
    assert not explicit.precision.native
    named = make_scenario("deepseek-v3", "h200", tp=8, quant="w8a8-fp8")
    assert named.precision.scheme == "w8a8-fp8"
    dense = make_scenario("llama-3.1-8b", "h200", weight_dtype="fp8")  # a bf16 checkpoint
    assert dense.precision.scheme == "w8a8-fp8"
    assert native.precision.scheme == "fp8-block" and native.precision.native
    weight_only = make_scenario("deepseek-v3", "h200", tp=8, weight_dtype="fp8", act_dtype="bf16")
    assert weight_only.precision.scheme == ""  # fp8 weight-only: no engine scheme names it


def test_dense_presets_keep_bf16() -> None:
    sc = make_scenario("llama-3.1-8b", "h100-sxm")
    assert (sc.precision.weight_dtype, sc.precision.act_dtype, sc.precision.kv_dtype) == (
        "bf16",
        "bf16",
        "bf16",
    )


def test_cli_deepseek_v3_fits_eight_h200_natively(capsys: pytest.CaptureFixture[str]) -> None:
    # 671B parameters at 1 byte are ~84 GB per GPU at TP8: it fits the 141 GB H200 in FP8, and
    # did not in bf16 (issue 15, item 9).
    assert main(["memory", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--json"]) == 0
    native = json.loads(capsys.readouterr().out)
    assert native["fits"] and 80e9 < native["weights_bytes"] < 90e9
    code = main(["memory", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8",
                 "--weight-dtype", "bf16", "--json"])  # fmt: skip
    assert code == 3  # does not fit
