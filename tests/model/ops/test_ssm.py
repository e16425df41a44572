"""A hybrid with state-space layers (Jamba): only its attention layers hold KV; its Mamba
layers hold a constant-size state that does not grow with the context; its rows exist in the
operator table with closed-form sizes."""

from __future__ import annotations

import pytest

from rooflens.model.ops.table import build_ops
from rooflens.model.predict.api import make_pipeline, make_scenario
from rooflens.model.predict.memory import kv_bytes_per_token, ssm_state_bytes_per_sequence
from rooflens.model.specs.presets import get_model


def test_jamba_has_four_attention_and_28_mamba_layers() -> None:
    m = get_model("jamba-v0.1")
    assert (m.n_attention_layers, m.n_mamba_layers) == (4, 28)
    assert (m.n_moe_layers, m.n_dense_layers) == (16, 16)  # experts on every other layer
    assert m.window_layers == {0: 4}


def test_kv_cache_is_4gb_at_256k_tokens_as_the_paper_says() -> None:
    # Jamba paper table 1: 4GB of KV cache for a 256K-token context (16-bit)
    sc = make_scenario("jamba-v0.1", "h100-sxm", prompt_len=256 * 1024, output_len=1)
    assert kv_bytes_per_token(sc) == 4 * 2 * 8 * 128 * 2  # 4 layers, K and V, 8 heads, bf16
    assert kv_bytes_per_token(sc) * 256 * 1024 / 2**30 == pytest.approx(4.0)


def test_mamba_state_is_constant_in_the_context_and_follows_tp() -> None:
    # per Mamba layer: E × (N + k − 1) = 8192 × (16 + 3) elements, bf16
    one = make_scenario("jamba-v0.1", "h100-sxm", prompt_len=1000, output_len=1)
    expected = 28 * 8192 * (16 + 4 - 1) * 2
    assert ssm_state_bytes_per_sequence(one) == expected
    short, long = (
        make_pipeline(make_scenario("jamba-v0.1", "h200", batch=2, prompt_len=p, output_len=1))
        .memory()
        .kv_cache_bytes
        for p in (1000, 101_000)
    )
    # the growth is the attention layers' KV only; the Mamba state is the same at both lengths
    assert long - short == pytest.approx(2 * 100_000 * kv_bytes_per_token(one))
    assert short == pytest.approx(2 * (expected + 1000 * kv_bytes_per_token(one)))
    two = make_scenario("jamba-v0.1", "h100-sxm", tp=2, prompt_len=1000, output_len=1)
    assert ssm_state_bytes_per_sequence(two) == expected / 2


def test_decode_rows_of_a_mamba_layer() -> None:
    sc = make_scenario("jamba-v0.1", "h100-sxm", batch=4, prompt_len=512, output_len=2)
    ops = {op.name: op for op in build_ops(sc, "decode", 4.0, 1.0, 600.0)}
    E, N, R, k, D = 8192, 16, 256, 4, 4096
    assert ops["ssm.in_proj"].count == 28 and ops["attn.qkv_proj"].count == 4
    assert ops["ssm.in_proj"].flops == 2 * 4 * 2 * E * D
    assert ops["ssm.x_proj"].flops == 2 * 4 * (R + 2 * N) * E
    scan = ops["ssm.scan"]
    assert scan.kv_bytes == pytest.approx(2 * 4 * E * (N + k - 1) * 2)  # state read + written
    (core,) = [op for op in build_ops(sc, "decode", 4.0, 1.0, 600.0) if op.name == "attn.core"]
    assert core.count == 4
    assert "attn.rope" not in ops  # Jamba has no positional encoding
