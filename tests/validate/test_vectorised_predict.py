"""The one kernel-table predictor (model/pricing/kernel_table.py) prices whole tables at once;
grouping rows must not change a row's price (it equals predict_kernels row for row), and its
validator-only ops must follow the operator table's constructors (model/ops/op.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import get_gpu
from rooflens.model.pricing.kernel_table import predict_frame, predict_kernels

A100 = get_gpu("a100-sxm-80gb")
TABLE = pd.DataFrame(
    [
        {"op": "gemm", "m": 1, "n": 4096, "k": 4096, "dtype": "bf16"},
        {"op": "gemm", "m": 77, "n": 1823, "k": 781, "dtype": "float16"},
        {"op": "gemm", "m": 64, "n": 4096, "k": 4096, "dtype": "bf16", "weight_dtype": "int4",
         "group_size": 64},
        {"op": "gemm", "m": 300, "n": 5000, "k": 128, "dtype": "bf16", "weight_dtype": "int8"},
        {"op": "attention_prefill", "batch": 2, "seq_len": 1000, "n_heads": 32, "n_kv_heads": 8,
         "head_dim": 128, "dtype": "bf16", "kv_dtype": "bf16"},
        {"op": "attention_decode", "batch": 64, "kv_len": 4097, "n_heads": 64, "n_kv_heads": 8,
         "head_dim": 128, "dtype": "bf16", "kv_dtype": "fp8"},
        {"op": "attention_decode", "batch": 1, "kv_len": 2, "n_heads": 8, "n_kv_heads": 8,
         "head_dim": 64, "dtype": "fp16", "kv_dtype": "fp16"},
        {"op": "moe", "num_tokens": 1, "hidden_size": 4096, "inter_size": 14336, "topk": 2,
         "num_experts": 8, "moe_tp_size": 2, "moe_ep_size": 1, "dtype": "bf16"},
        {"op": "moe", "num_tokens": 3000, "hidden_size": 7168, "inter_size": 2048, "topk": 8,
         "num_experts": 256, "moe_tp_size": 1, "moe_ep_size": 8, "dtype": "bf16",
         "weight_dtype": "int4", "group_size": 64},
    ]
)  # fmt: skip


@pytest.mark.parametrize("profile", ["ideal", "calibrated"])
@pytest.mark.parametrize("gpu_id", ["a100-sxm-80gb", "h100-sxm"])
def test_a_table_prices_each_row_as_it_would_alone(profile, gpu_id):
    # A one-token prefill row sits in the table with long prefills: grouped or alone, it takes
    # the decode terms (pricing.kind_terms), as it would row by row.
    gpu = get_gpu(gpu_id)
    one = {"op": "attention_prefill", "batch": 4, "seq_len": 1, "n_heads": 32, "n_kv_heads": 8,
           "head_dim": 128, "dtype": "bf16", "kv_dtype": "bf16"}  # fmt: skip
    table = pd.concat([TABLE, pd.DataFrame([one])], ignore_index=True)
    together = predict_kernels(table, gpu, profile)
    alone = pd.concat([predict_frame(table.iloc[[i]], gpu, profile) for i in range(len(table))])
    for column in ("flops", "bytes", "predicted_s"):
        pd.testing.assert_series_equal(together[column], alone[column], rtol=1e-12, atol=0,
                                       check_dtype=False)  # fmt: skip
    assert list(together["bound"]) == list(alone["bound"])
    assert list(together.columns[: len(table.columns)]) == list(table.columns)


def test_norm_elementwise_embedding_follow_the_operator_table():
    table = pd.DataFrame([
        {"op": "norm", "rows": 100, "hidden": 4096, "residual": 1, "dtype": "bf16"},
        {"op": "norm", "rows": 100, "hidden": 4096, "residual": 0, "norm": "layernorm",
         "dtype": "fp16"},
        {"op": "elementwise", "elements_read": 1000, "elements_written": 500, "dtype": "bf16"},
        {"op": "embedding", "rows": 10, "hidden": 4096, "dtype": "bf16"},
    ])  # fmt: skip
    out = predict_frame(table, A100)
    n, D = 100, 4096
    # Fused add+norm: read x and residual, write y and residual (2 B each) + 1 weight vector.
    assert out.loc[0, "bytes"] == 4 * n * D * 2 + D * 2
    assert out.loc[0, "flops"] == 5 * n * D
    assert out.loc[1, "bytes"] == 2 * n * D * 2 + 2 * D * 2  # LayerNorm: weight and bias
    assert out.loc[2, "bytes"] == 1500 * 2
    assert out.loc[3, "bytes"] == 10 * 4096 * 2 * 2  # rows read from the table, written out
    assert out.loc[0, "predicted_s"] == pytest.approx(out.loc[0, "bytes"] / 2.039e12)


def test_bad_rows_raise_one_line_errors():
    with pytest.raises(RooflensError, match="row 1: dtype='bf17' is not a dtype"):
        good = {"op": "gemm", "m": 1, "n": 1, "k": 1, "dtype": "bf16"}
        predict_frame(pd.DataFrame([good, {**good, "dtype": "bf17"}]), A100)
    with pytest.raises(RooflensError, match="unknown op"):
        predict_frame(pd.DataFrame([{"op": "conv", "dtype": "bf16"}]), A100)
    with pytest.raises(RooflensError, match="positive"):
        predict_frame(pd.DataFrame([{"op": "gemm", "m": 0, "n": 1, "k": 1, "dtype": "bf16"}]), A100)
    with pytest.raises(RooflensError, match="divide"):
        bad = {"op": "attention_decode", "batch": 1, "kv_len": 8, "n_heads": 6, "n_kv_heads": 4,
               "head_dim": 64, "dtype": "bf16"}  # fmt: skip
        predict_frame(pd.DataFrame([bad]), A100)
    with pytest.raises(RooflensError, match="moe_ep_size must divide"):
        bad = {"op": "moe", "num_tokens": 4, "hidden_size": 64, "inter_size": 64, "topk": 2,
               "num_experts": 8, "moe_tp_size": 1, "moe_ep_size": 3, "dtype": "bf16"}  # fmt: skip
        predict_frame(pd.DataFrame([bad]), A100)
