"""A benchmark's GEMM whose weight copies fit in L2 (model/pricing/l2_resident.py) against its
closed form, the collectors' copy rule against the tables it was read from, and a deployment's
GEMMs, which state no copies and stream cold."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import IDEAL, KindEfficiency, Profile
from rooflens.hardware.systems import default_system
from rooflens.model.ops.op import gemm_op
from rooflens.model.pricing.kernel_table import predict_frame
from rooflens.model.pricing.l2_resident import REPLAY_COPIES, replayed
from rooflens.model.pricing.roofline import price_op
from rooflens.validate.aiconfigurator import gemm_copies

TERMS = {"memory_fraction": 0.9, "l2_bytes_per_sm_cycle": 5.0}


def _profile(**terms: float) -> Profile:
    return Profile(name="calibrated", kinds={"gemm": KindEfficiency(**terms)}, source="test")


def test_resident_weights_stream_at_the_sms_l2_rate():
    # RTX PRO 6000: 188 SMs x 2.49 GHz x 5 B = 2.34 TB/s, above its GDDR7's 0.9 x 1.597 TB/s.
    # 4096 x 2048 bf16 weights are 16.8 MB: 8 copies fill the 134.2 MB L2 to the byte, 9 do not
    gpu = get_gpu("rtx-pro-6000")
    system = default_system(gpu)
    dram = gpu.hbm_bytes_per_s * 0.9
    l2 = gpu.sm_count * float(gpu.boost_clock_hz or 0) * 5.0
    for copies, resident in ((6, True), (8, True), (9, False)):
        op = replayed(gemm_op("x", "decode", 1, 1, 4096, 2048, "bf16", "bf16"), copies)
        memory = float(price_op(op, system, _profile(**TERMS)).memory_s)
        weights = 4096 * 2048 * 2.0
        expected = op.act_bytes / dram + (weights / l2 if resident else weights / dram)
        assert memory == pytest.approx(expected, rel=1e-12)
    # no copies stated (every GEMM of a deployment's step): the weights stream from DRAM
    cold = gemm_op("x", "decode", 1, 1, 4096, 2048, "bf16", "bf16")
    assert float(price_op(cold, system, _profile(**TERMS)).memory_s) == pytest.approx(
        cold.bytes / dram, rel=1e-12
    )


def test_activations_stream_cold_when_the_weights_are_resident():
    # m = 16,384 rows over 1 MB of weights: the activations are 99 % of the bytes, and the L2
    # rate saves only the weights' share
    gpu = get_gpu("rtx-pro-6000")
    system = default_system(gpu)
    op = replayed(gemm_op("x", "prefill", 1, 16384, 512, 1024, "bf16", "bf16"), 6)
    priced = price_op(op, system, _profile(**TERMS))
    cold = price_op(op, system, _profile(memory_fraction=0.9))
    assert float(priced.memory_s) < float(cold.memory_s)
    assert float(priced.memory_s) > 0.99 * float(cold.memory_s)


@pytest.mark.parametrize("gpu_id", ["b300", "h100-sxm", "a100-sxm-80gb"])
def test_where_dram_beats_the_l2_rate_nothing_changes(gpu_id: str):
    # 5 B per SM cycle is 2.9, 2.6 and 0.76 TB/s on these SMs, below 0.9 of their HBM
    gpu = get_gpu(gpu_id)
    system = default_system(gpu)
    op = replayed(gemm_op("x", "decode", 1, 1, 2048, 2048, "bf16", "bf16"), 6)
    with_term = price_op(op, system, _profile(**TERMS)).time_s
    without = price_op(op, system, _profile(memory_fraction=0.9)).time_s
    assert float(with_term) == pytest.approx(float(without), rel=1e-12)


def test_ideal_has_no_l2_rate_and_stays_the_lower_bound():
    gpu = get_gpu("rtx-pro-6000")
    system = default_system(gpu)
    op = replayed(gemm_op("x", "decode", 1, 1, 4096, 2048, "bf16", "bf16"), 6)
    assert float(price_op(op, system, IDEAL).memory_s) == pytest.approx(
        op.bytes / gpu.hbm_bytes_per_s, rel=1e-12
    )


def test_the_kernel_tables_column_prices_as_the_op_does():
    gpu = get_gpu("rtx-pro-6000")
    rows = pd.DataFrame({"op": "gemm", "m": [1, 1, 1], "n": [4096] * 3, "k": [2048] * 3,
                         "dtype": "bf16", REPLAY_COPIES: [6.0, 9.0, np.nan]})  # fmt: skip
    priced = predict_frame(rows, gpu, _profile(**TERMS))["predicted_s"].to_numpy()
    system = default_system(gpu)
    for i, copies in enumerate((6, 9, None)):
        op = replayed(gemm_op("x", "kernel", 1, 1, 4096, 2048, "bf16", "bf16"), copies)
        assert priced[i] == pytest.approx(float(price_op(op, system, _profile(**TERMS)).time_s))
    assert priced[0] < priced[1] == pytest.approx(priced[2])


def test_a_models_operator_table_states_no_copies():
    import rooflens

    result = rooflens.predict(model="llama-3-8b", gpu="rtx-pro-6000", batch=1, prompt_len=512,
                              output_len=16)  # fmt: skip
    ops = [p.op for phase in (result.prefill, result.decode) for p in phase.priced]
    assert ops and not any(REPLAY_COPIES in op.shape for op in ops)


def test_the_collectors_copy_rule():
    # SGLang and vLLM cycle 6 copies (vLLM's NVFP4 one); TensorRT-LLM ceil(L2 / weights), 1 to 5
    # (its own bytes per element), and its profiler-timed TensorRT 1.0 rows state none
    raw = pd.DataFrame(
        {
            "framework": ["SGLang", "VLLM", "VLLM", "TRTLLM", "TRTLLM", "TRTLLM", "TRTLLM",
                          "TRTLLM"],
            "gemm_dtype": ["bfloat16", "fp8", "nvfp4", "bfloat16", "bfloat16", "bfloat16",
                           "nvfp4", "int4_wo"],
            "n": [4096, 4096, 4096, 4096, 3072, 4096, 65536, 4096],
            "k": [8192, 8192, 8192, 2048, 4096, 8192, 65536, 4096],
            "kernel_source": ["sglang", "vllm_default", "vllm_default", "torch_flow",
                              "torch_flow", "torch_flow", "torch_flow",
                              "trt_flow_/weight_only_quant_matmul"],
        }
    )  # fmt: skip
    copies = gemm_copies(raw, pd.Series(["rtx-pro-6000"] * len(raw)))
    expected = [6, 6, 1, 5, 5, 2, 1, np.nan]
    np.testing.assert_array_equal(copies.to_numpy(), np.array(expected, dtype=float))


def test_a_replayed_decode_reads_its_cache_from_l2_where_it_fits():
    # batch 8, 32 x 8 heads of 128, bf16: 4,096 cached tokens read 134.2 MB (the RTX PRO 6000's
    # L2 to the byte, the new token's write aside), 8,192 read twice that
    from rooflens.model.ops.attention import attention_op

    gpu = get_gpu("rtx-pro-6000")
    system = default_system(gpu)
    terms = _profile(**TERMS).kinds["gemm"]
    profile = Profile(name="calibrated", kinds={"attention_decode": terms}, source="test")
    cold = Profile(name="calibrated", kinds={"attention_decode": KindEfficiency(
        memory_fraction=0.9)}, source="test")  # fmt: skip
    for length, resident in ((4096, True), (8192, False)):
        op = attention_op(
            "decode", 1, 8, 1, length, 32, 8, 128, "bf16", "bf16", 0, gpu.sm_count, splits=1.0
        )  # one grid (no split to choose)
        again = op.shape["kv_read_bytes"]
        assert (again <= gpu.l2_bytes) == resident
        saved = price_op(replayed(op, 1.0), system, cold).memory_s - price_op(
            replayed(op, 1.0), system, profile).memory_s  # fmt: skip
        l2 = gpu.sm_count * float(gpu.boost_clock_hz or 0) * 5.0
        dram = gpu.hbm_bytes_per_s * 0.9 * op.bandwidth_fraction  # its grid's share of DRAM
        expected = again / dram - again / l2 if resident else 0.0
        assert float(saved) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_the_attention_tables_replay_one_cache(measured_dir):
    from rooflens.validate.datasets import load_kernels

    kernels = load_kernels(measured_dir)
    engines = kernels["impl"].str.split("-").str[0].isin(("vllm", "sglang", "trtllm"))
    attention = kernels[kernels["op"].isin(("attention_prefill", "attention_decode")) & engines]
    assert len(attention) and attention[REPLAY_COPIES].eq(1.0).all()
