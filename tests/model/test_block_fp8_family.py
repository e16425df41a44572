"""FP8-block (`--quant fp8-block`, DeepSeek-V3's native format) runs the engines' 128-block FP8
kernels (DeepGEMM, block-scaled CUTLASS), measured and fitted apart from per-tensor FP8's
scaled-mm (model/specs/quant.py). The scheme's matmuls must name that family in their rows, or
they are priced as per-tensor FP8: until this test, the scheme changed nothing but its label
(the same TPOT as W8A8-FP8), and DeepSeek-V3's experts took vLLM's per-tensor FP8 MoE terms,
4.5x its block kernels' at 32 tokens."""

from __future__ import annotations

import json

import pytest

from rooflens.cli import main


def _ops(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict]:
    assert main(["predict", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["ops"]


def test_fp8_block_matmuls_name_their_family_and_are_priced_by_it(capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "4", "--prompt-len", "512",
            "--engine", "sglang"]  # fmt: skip
    block = _ops(capsys, *argv, "--quant", "fp8-block")
    tensor = _ops(capsys, *argv, "--quant", "w8a8-fp8")
    gemms = [o for o in block if o["op"] == "gemm"]
    assert {o["name"] for o in gemms} >= {"attn.qkv_proj", "mlp.down", "lm_head"}
    for o in gemms:  # the 16-bit lm_head runs cuBLAS: no family
        assert o.get("quant") == ("fp8_block" if o["weight_dtype"] == "fp8" else None), o
    assert not any("quant" in o for o in tensor)  # fp8 operands name per-tensor FP8 themselves
    # the second route (`call_exact`: each call priced again through `kernels predict`'s path,
    # model/pricing/reprice.py) prices the same calls, family included, as the table did
    assert all(o["call_exact"] for o in gemms)
    # and the families' terms differ, so the two schemes' matmuls do
    by_name = {(o["phase"], o["name"]): o["time_s"] for o in tensor}
    assert any(o["time_s"] != pytest.approx(by_name[(o["phase"], o["name"])], rel=1e-3)
               for o in gemms if o.get("quant"))  # fmt: skip


def test_deepseek_v3_experts_run_the_block_fp8_moe(capsys) -> None:  # type: ignore[no-untyped-def]
    ops = _ops(capsys, "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--batch", "32",
               "--prompt-len", "2048", "--engine", "vllm")  # fmt: skip
    experts = [o for o in ops if o["name"] == "moe.experts"]
    router = [o for o in ops if o["name"] == "moe.router"]
    assert experts and all(o["quant"] == "fp8_block" for o in experts)
    assert router and not any("quant" in o for o in router)  # built unquantized (16-bit)
    decode = next(o for o in experts if o["phase"] == "decode")
    assert decode["call_exact"]  # its call, priced alone, gives its seconds
    seconds = decode["time_s"] / decode["count"]
    # vLLM measured its block-FP8 fused MoE on the H100 (the H200's SM) at 0.25-0.29 ms for 32
    # tokens of DeepSeek-V3 at TP 8 (aiconfigurator-h100/moe/vllm/0.24.0, 3 routings); the
    # H200 streams the same ~0.9 GB of experts 1.4x faster. Per-tensor FP8 terms said 1.23 ms.
    assert 0.1e-3 < seconds < 0.35e-3


def test_the_planner_prices_and_names_deepseek_fp8_as_its_checkpoint(capsys) -> None:  # type: ignore[no-untyped-def]
    # --weight-dtypes fp8 of DeepSeek-V3 is its own checkpoint (quant.py keeps_block_scales):
    # the planner's rows price FP8-block and its text says so, as `predict` does natively
    argv = ["plan", "--model", "deepseek-v3", "--gpus", "h200", "--rate", "2", "--prompt-len",
            "2000", "--output-len", "200", "--tp", "8", "--weight-dtypes", "fp8", "--kv-dtypes",
            "bf16", "--engine", "sglang"]  # fmt: skip
    assert main([*argv, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["recommended"]["scheme"] == "fp8-block"
    assert all(row["scheme"] == "fp8-block" for row in plan["pareto"])
    text = "\n".join(plan["explanation"])
    assert "FP8-block" in text and "W8A8-FP8" not in text
    # and it is the scheme `predict` prices DeepSeek-V3 with natively
    assert main(["predict", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--engine",
                 "sglang", "--json"]) == 0  # fmt: skip
    native = json.loads(capsys.readouterr().out)["precision"]
    assert native["scheme"] == plan["recommended"]["scheme"]
