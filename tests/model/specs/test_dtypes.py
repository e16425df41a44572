"""NVFP4 and MXFP4: bytes per element with their scales (closed forms from the format specs),
the tensor-core unit they run on, and the weight-only fallback on GPUs without FP4 units."""

from __future__ import annotations

import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import get_gpu
from rooflens.model.ops.op import gemm_op, weight_storage_bytes
from rooflens.model.predict.api import make_scenario, run
from rooflens.model.predict.memory import linear_params_per_gpu, weights_bytes_per_gpu
from rooflens.model.specs.dtypes import compute_dtype, dtype_bytes


def test_nvfp4_is_four_and_a_half_bits_plus_a_per_tensor_fp32_scale():
    # e2m1 (4 bits) + one e4m3 scale (8 bits) per 16 elements = 4.5 bits; + 4 bytes per tensor
    n = 4096 * 14336
    assert dtype_bytes("nvfp4") * 8 == pytest.approx(4.5)
    assert weight_storage_bytes(n, "nvfp4", 128) == pytest.approx(n * 4.5 / 8 + 4)
    assert weight_storage_bytes(n, "nvfp4", 128, tensors=3) == pytest.approx(n * 4.5 / 8 + 12)


def test_mxfp4_is_four_and_a_quarter_bits_and_ignores_the_int_group_size():
    # e2m1 + one e8m0 scale (8 bits) per 32 elements = 4.25 bits; the block is the format's own
    n = 2880 * 5760
    for group in (32, 128, 4096):
        assert weight_storage_bytes(n, "mxfp4", group) == pytest.approx(n * 4.25 / 8)


def test_fp4_units():
    assert compute_dtype("nvfp4", "nvfp4") == "fp4"
    assert compute_dtype("mxfp4", "mxfp4") == "fp4"
    assert compute_dtype("nvfp4", "bf16") == "bf16"  # weight-only: dequantized to 16-bit
    assert compute_dtype("mxfp4", "fp8") == "fp8"  # FP8 x FP4 runs at the fp8 rate


def test_b200_fp4_peak_is_twice_fp8_and_older_parts_fall_back():
    b200, h100, a100 = get_gpu("b200"), get_gpu("h100-sxm"), get_gpu("a100-sxm-80gb")
    assert b200.peak("fp4") == pytest.approx(9.0e15)  # HGX B200 datasheet: 18 PFLOPS sparse
    assert b200.peak("fp4") == pytest.approx(2 * b200.peak("fp8"))
    assert h100.peak("fp4") == h100.peak("fp8")
    assert a100.peak("fp4") == a100.peak("fp16")


def test_weight_only_fp4_gemm_on_hopper_reads_fp4_bytes_and_computes_at_bf16():
    w4 = gemm_op("mlp.down", "decode", 32, 8.0, 4096.0, 14336.0, "nvfp4", "bf16")
    w16 = gemm_op("mlp.down", "decode", 32, 8.0, 4096.0, 14336.0, "bf16", "bf16")
    assert w4.flops == w16.flops
    assert w4.compute_dtype == "bf16"
    assert w4.weight_bytes == pytest.approx(w16.weight_bytes * 4.5 / 16 + 4)
    assert w4.vector_flops > 0  # the e2m1 -> bf16 convert on CUDA cores
    native = gemm_op("mlp.down", "decode", 32, 8.0, 4096.0, 14336.0, "nvfp4", "nvfp4")
    assert native.compute_dtype == "fp4" and native.vector_flops == 0


def test_fp4_weights_shrink_memory_by_the_format_ratio():
    bf16 = make_scenario("llama-3.1-8b", "b200", weight_dtype="bf16")
    fp4 = make_scenario("llama-3.1-8b", "b200", weight_dtype="mxfp4")
    ratio = (4.25 / 8) / 2.0
    # embeddings, lm_head and norms stay 16-bit; the linear layers shrink by the format ratio
    saved = weights_bytes_per_gpu(bf16) - weights_bytes_per_gpu(fp4)
    assert saved == pytest.approx(linear_params_per_gpu(bf16) * 2.0 * (1 - ratio), rel=1e-12)
    # NVFP4 adds one fp32 scale per weight matrix: 32 layers x (q, k, v, o, gate, up, down)
    nv = make_scenario("llama-3.1-8b", "b200", weight_dtype="nvfp4")
    extra = (
        weights_bytes_per_gpu(nv)
        - weights_bytes_per_gpu(bf16)
        + linear_params_per_gpu(bf16) * (2.0 - 4.5 / 8)
    )
    assert extra == pytest.approx(32 * 7 * 4.0, abs=1e-3)


def test_fp4_decode_is_faster_on_blackwell_than_bf16_and_compute_halves_against_fp8():
    kw = dict(batch=256, prompt_len=2048, output_len=64)
    fp8 = run(make_scenario("llama-3.1-8b", "b200", weight_dtype="fp8", act_dtype="fp8", **kw))
    fp4 = run(make_scenario("llama-3.1-8b", "b200", weight_dtype="nvfp4", act_dtype="nvfp4", **kw))
    assert fp4.tpot_s < fp8.tpot_s
    assert fp4.ttft_s < fp8.ttft_s


@pytest.mark.parametrize("flag", ["act_dtype", "kv_dtype"])
def test_fp4_activations_or_kv_need_fp4_tensor_cores(flag):
    with pytest.raises(RooflensError, match="needs FP4 tensor cores"):
        make_scenario("llama-3.1-8b", "h100-sxm", **{flag: "nvfp4"})
    make_scenario("llama-3.1-8b", "b200", **{flag: "nvfp4"})


def test_fp4_kv_cache_bytes_include_block_scales():
    from rooflens.model.predict.memory import kv_bytes_per_token

    bf16 = make_scenario("llama-3.1-8b", "b200", kv_dtype="bf16")
    fp4 = make_scenario("llama-3.1-8b", "b200", kv_dtype="nvfp4")
    assert kv_bytes_per_token(fp4) == pytest.approx(kv_bytes_per_token(bf16) * 4.5 / 16)
