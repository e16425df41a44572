"""Per-layer attention kinds (gpt-oss: sliding 128 and full layers alternate) flow through
memory (KV held per layer kind) and time (one attn.core row per kind); the 2025 presets'
native dtypes reproduce their published checkpoint sizes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.ops.table import build_ops
from rooflens.model.predict.api import make_pipeline, make_scenario
from rooflens.model.predict.memory import kv_bytes_per_token, weights_bytes_per_gpu
from rooflens.model.specs.hf_import import from_hf_config
from rooflens.model.specs.params import count_params
from rooflens.model.specs.presets import get_model

GIB = 2.0**30
FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_gpt_oss_alternates_twelve_sliding_and_twelve_full_layers() -> None:
    m = get_model("gpt-oss-20b")
    assert m.window_layers == {128: 12, 0: 12}
    assert get_model("gpt-oss-120b").window_layers == {128: 18, 0: 18}
    assert get_model("llama-3.1-8b").window_layers == {0: 32}
    assert get_model("mistral-7b").window_layers == {4096: 32}


@pytest.mark.parametrize("context", [100, 128, 4096, 100_000])
def test_kv_cache_holds_the_window_in_sliding_layers_and_everything_in_full_ones(
    context: int,
) -> None:
    sc = make_scenario("gpt-oss-20b", "h100-sxm", batch=3, prompt_len=context, output_len=1)
    mem = make_pipeline(sc).memory()
    per_layer_token = 2 * 8 * 64 * 2  # 2 (K, V) · 8 KV heads · 64 dims · bf16
    assert kv_bytes_per_token(sc) == 24 * per_layer_token
    expected = 3 * per_layer_token * (12 * context + 12 * min(context, 128))
    assert mem.kv_cache_bytes == pytest.approx(expected)


def test_decode_table_has_one_attention_row_per_layer_kind() -> None:
    sc = make_scenario("gpt-oss-20b", "h100-sxm", batch=4, prompt_len=8192, output_len=2)
    B, L = 4.0, 8000.0
    rows = [op for op in build_ops(sc, "decode", B, 1.0, L) if op.name == "attn.core"]
    by_window = {op.shape["window"]: op for op in rows}
    assert sorted(by_window) == [0, 128] and [op.count for op in rows] == [12, 12]
    row_bytes = 2 * 8 * 64 * 2  # K and V of one position, bf16
    # the KV read of a decode step: all L positions in a full layer, the last 128 in a sliding
    assert by_window[0].kv_bytes == pytest.approx(B * (L + 1) * row_bytes)
    assert by_window[128].kv_bytes == pytest.approx(B * (128 + 1) * row_bytes)
    assert by_window[0].flops == pytest.approx(by_window[128].flops * L / 128)


def test_mixed_attention_costs_the_mean_of_all_full_and_all_sliding() -> None:
    # second route: the same model with every layer full, and with every layer sliding
    m = get_model("gpt-oss-20b")
    sc = make_scenario(m, "h100-sxm", batch=8, prompt_len=16_384, output_len=64)
    full = make_scenario(m.with_window(0), "h100-sxm", batch=8, prompt_len=16_384, output_len=64)
    slid = make_scenario(m.with_window(128), "h100-sxm", batch=8, prompt_len=16_384, output_len=64)

    def attention_s(s):  # type: ignore[no-untyped-def]
        decode = make_pipeline(s).predict().decode.priced
        return sum(float(np.sum(p.total_s)) for p in decode if p.op.name == "attn.core")

    assert attention_s(sc) == pytest.approx((attention_s(full) + attention_s(slid)) / 2, rel=1e-6)


def test_gpt_oss_native_weights_match_the_published_checkpoint_sizes() -> None:
    # gpt-oss model card: checkpoints of 12.8 GiB (20b) and 60.8 GiB (120b), MoE weights in
    # MXFP4 (4.25 bits per parameter), everything else bf16
    for model_id, gib in (("gpt-oss-20b", 12.8), ("gpt-oss-120b", 60.8)):
        sc = make_scenario(model_id, "h100-sxm")
        assert sc.precision.expert_weight_dtype == "mxfp4" and sc.precision.weight_dtype == "bf16"
        assert weights_bytes_per_gpu(sc) / GIB == pytest.approx(gib, rel=0.01)


def test_gpt_oss_experts_dequantize_on_hopper_and_read_mxfp4_bytes() -> None:
    sc = make_scenario("gpt-oss-120b", "h100-sxm", batch=1, prompt_len=64, output_len=2)
    (experts,) = [op for op in build_ops(sc, "decode", 1.0, 1.0, 64.0) if op.name == "moe.experts"]
    assert experts.compute_dtype == "bf16"  # weight-only: no FP4 units before Blackwell
    per_expert = 3 * 2880 * 2880  # gate, up, down
    assert experts.weight_bytes == pytest.approx(4 * per_expert * 4.25 / 8)  # top-4 experts read


def test_active_parameters_match_the_card_without_the_unembedding() -> None:
    # gpt-oss model card table 1 counts active parameters without the unembedding matrix
    for model_id, active in (("gpt-oss-20b", 3.61e9), ("gpt-oss-120b", 5.13e9)):
        pc = count_params(get_model(model_id))
        assert (pc.active - pc.lm_head) == pytest.approx(active, rel=0.002)


def test_qwen3_runs_a_qk_norm_row_and_llama_does_not() -> None:
    qwen = make_scenario("qwen3-8b", "h100-sxm")
    (row,) = [op for op in build_ops(qwen, "decode", 2.0, 1.0, 100.0) if op.name == "attn.qk_norm"]
    assert row.count == 36
    assert row.act_bytes == pytest.approx(2 * 2.0 * (32 + 8) * 128 * 2)  # read and write q, k
    llama = make_scenario("llama-3.1-8b", "h100-sxm")
    assert not [op for op in build_ops(llama, "decode", 2.0, 1.0, 100.0) if "qk_norm" in op.name]


def test_sliding_window_optimization_windows_every_layer() -> None:
    sc = make_scenario("gpt-oss-20b", "h100-sxm", prompt_len=10_000, output_len=1)
    mem = make_pipeline(sc, ["sliding-window:window=512"]).memory()
    assert mem.kv_cache_bytes == pytest.approx(kv_bytes_per_token(sc) * 512)


def test_unknown_layer_kind_is_refused_in_one_line(tmp_path: Path) -> None:
    config = json.loads((FIXTURES / "gpt-oss-20b" / "config.json").read_text())
    config["layer_types"][3] = "chunked_attention"
    path = tmp_path / "m" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config))
    with pytest.raises(RooflensError, match="layer_types") as info:
        from_hf_config(path)
    assert "\n" not in str(info.value)


def test_gemma3_holds_512_positions_in_local_layers_and_all_in_every_sixth() -> None:
    m = get_model("gemma-3-1b")
    assert m.window_layers == {512: 22, 0: 4}  # layers 6, 12, 18, 24 are global
    sc = make_scenario(m, "l4", batch=2, prompt_len=8192, output_len=1)
    per_layer_token = 2 * 1 * 256 * 2  # K and V, one KV head of 256 dims, bf16
    expected = 2 * per_layer_token * (4 * 8192 + 22 * 512)
    assert make_pipeline(sc).memory().kv_cache_bytes == pytest.approx(expected)
    names = [op.name for op in build_ops(sc, "decode", 2.0, 1.0, 8192.0)]
    # the sandwich norms of Gemma3DecoderLayer: post-attention and post-feedforward
    assert names.count("norm.post_attn") == 1 and names.count("norm.post_mlp") == 1
