"""Loaders of the shared measurements: units, keys and derived shapes against the raw files."""

from __future__ import annotations

import pandas as pd
import pytest

from validate.datasets import load_kernels, load_moe, load_nccl


@pytest.fixture(scope="module")
def kernels(measured_dir):
    return load_kernels(measured_dir)


def test_every_row_has_the_contract_and_provenance_columns(kernels):
    for column in ("op", "dtype", "measured_s", "impl", "gpu", "source"):
        assert kernels[column].notna().all(), column
    assert set(kernels["gpu"]) == {"a100-sxm-80gb", "a40"}
    assert (kernels["measured_s"] > 0).all()


def test_aiconfigurator_latency_is_converted_from_ms(kernels, measured_dir):
    raw = pd.read_parquet(measured_dir / "aiconfigurator-a100/gemm/vllm/0.14.0/gemm_perf.parquet")
    one = raw[(raw.m == 8192) & (raw.n == 65536) & (raw.k == 4096)].iloc[0]
    rows = kernels[(kernels.impl == "vllm-0.14.0:vllm_default") & (kernels.m == 8192)
                   & (kernels.n == 65536) & (kernels.k == 4096)]  # fmt: skip
    assert len(rows) == 1
    assert rows["measured_s"].iloc[0] == pytest.approx(one.latency * 1e-3, rel=1e-12)
    assert rows["dtype"].iloc[0] == "bf16"


def test_decode_kv_len_is_cached_tokens_plus_the_new_one(kernels, measured_dir):
    path = "aiconfigurator-a100/attention/sglang/0.5.10/generation_attention_perf.parquet"
    raw = pd.read_parquet(measured_dir / path)
    rows = kernels[kernels.source == path]
    assert len(rows) == len(raw)
    assert sorted(rows["kv_len"].unique()) == sorted((raw["step"] + 1).unique())
    assert rows["kv_len"].min() == 2  # step 1: one cached token plus the new one


def test_vidur_gemm_shapes_follow_the_readme(kernels):
    # Llama-2-7B: D 4096, 32 heads (MHA), F 11008, gated. At TP 2: fused QKV N = 3·4096/2,
    # up N = 2·11008/2, down K = 11008/2, o_proj K = 4096/2.
    rows = kernels[(kernels.model == "Llama-2-7b-hf") & (kernels.tp == 2)
                   & (kernels.gpu == "a40") & (kernels.m == 128)]  # fmt: skip
    shapes = {r.name: (r.n, r.k) for r in rows.itertuples() if r.op == "gemm"}
    assert shapes == {
        "attn_pre_proj": (6144, 4096),
        "attn_post_proj": (4096, 2048),
        "mlp_up_proj": (11008, 4096),
        "mlp_down_proj": (4096, 5504),
    }
    act = kernels[(kernels.model == "Llama-2-7b-hf") & (kernels.tp == 2) & (kernels.gpu == "a40")
                  & (kernels.name == "mlp_act")]  # fmt: skip
    act = act[act.elements_written == 128 * 5504]
    assert set(act["elements_read"]) == {128 * 11008}  # gate and up halves in, F/TP out


def test_vidur_phi2_has_one_layernorm_and_no_gate(kernels):
    rows = kernels[(kernels.model == "phi-2") & (kernels.gpu == "a100-sxm-80gb")]
    norms = rows[rows.op == "norm"]
    assert set(norms["name"]) == {"input_layernorm"} and set(norms["norm"]) == {"layernorm"}
    up = rows[(rows.name == "mlp_up_proj")]
    assert set(up["n"]) == {10240}


def test_moe_and_nccl_tables(measured_dir):
    moe = load_moe(measured_dir)
    assert len(moe) == 6360 and {"num_tokens", "topk", "num_experts"} <= set(moe.columns)
    nccl = load_nccl(measured_dir)
    half = nccl[(nccl.dtype == "fp16")].iloc[0]
    raw = pd.read_parquet(measured_dir / "aiconfigurator-a100/comm/nccl/2.27.3/nccl_perf.parquet")
    assert half.message_bytes == 2 * raw[raw.nccl_dtype == "half"].iloc[0].message_size
