"""Second route for the bytes and FLOPs the validator joins on: the cost model's counts
(model/pricing/kernel_table.py, the operator constructors of model/ops/) against each Triton
kernel's own analytical cost."""

from __future__ import annotations

import pandas as pd
import pytest

from rooflens.hardware.presets import get_gpu
from rooflens.kernels import KERNELS
from rooflens.model.pricing.kernel_table import predict_frame

A100 = get_gpu("a100-sxm-80gb")


def _model(row: dict) -> tuple[float, float]:
    out = predict_frame(pd.DataFrame([row]), A100).iloc[0]
    return out["flops"], out["bytes"]


@pytest.mark.parametrize(("m", "n", "k"), [(1, 4096, 4096), (77, 1823, 781)])
def test_gemm_matches_exactly(m, n, k):
    row = {"op": "gemm", "m": m, "n": n, "k": k, "dtype": "bf16"}
    assert _model(row) == KERNELS["gemm"].cost(m, n, k, "bf16")


@pytest.mark.parametrize(("m", "n", "k"), [(1, 4096, 4096), (77, 1823, 768)])
def test_int8_weights_match_exactly(m, n, k):
    # K a multiple of the group, as the kernel requires.
    row8 = {"op": "gemm", "m": m, "n": n, "k": k, "dtype": "bf16", "weight_dtype": "int8",
            "group_size": 128}  # fmt: skip
    assert _model(row8) == KERNELS["w8a16_gemm"].cost(m, n, k, "bf16", 128)


def test_int4_weights_differ_by_the_zero_points_only():
    # The kernel stores a one-byte zero point per (row, group); model/ops/table.py counts scales
    # only.
    m, n, k, g = 64, 4096, 4096, 128
    flops, nbytes = _model({"op": "gemm", "m": m, "n": n, "k": k, "dtype": "bf16",
                            "weight_dtype": "int4", "group_size": g})  # fmt: skip
    kflops, kbytes = KERNELS["w4a16_gemm"].cost(m, n, k, "bf16", g)
    assert flops == kflops and kbytes - nbytes == n * k / g


def test_attention_adds_the_kv_cache_write_to_the_kernel_traffic():
    # FlashAttention reads Q, K, V and writes O. The model's attn.core also writes the new K/V
    # rows into the cache and reads them from the QKV output: 2 · (B·T·2·H_kv·D·2) bytes more.
    B, S, H, K, D = 2, 300, 8, 2, 64
    prefill = {"op": "attention_prefill", "batch": B, "seq_len": S, "n_heads": H,
               "n_kv_heads": K, "head_dim": D, "dtype": "bf16"}  # fmt: skip
    flops, nbytes = _model(prefill)
    kflops, kbytes = KERNELS["flash_attention"].cost(B, S, H, K, D, "bf16")
    assert flops == kflops and nbytes - kbytes == 2 * (B * S * 2 * K * D * 2)
    decode = {**prefill, "op": "attention_decode", "kv_len": S}
    flops, nbytes = _model(decode)
    kflops, kbytes = KERNELS["decode_attention"].cost(B, S, H, K, D, "bf16")
    # Decode also pays Flash-Decoding's partials, as kernels predict prices the call on the A100
    # grid: 4 programs want ceil(108 / 4) splits, capped at one per 128 keys: N = 300 / 128;
    # N fp32 partial outputs and log-sum-exps per query head, written then read back.
    N = S / 128
    combine = 2 * B * H * N * (D + 1) * 4
    assert flops == kflops
    assert nbytes - kbytes == pytest.approx(2 * (B * 2 * K * D * 2) + combine, rel=1e-12)


def test_fused_rmsnorm_matches():
    row = {"op": "norm", "rows": 77, "hidden": 512, "residual": 1, "dtype": "bf16"}
    assert _model(row) == KERNELS["rmsnorm"].cost(77, 512, "bf16", True)
