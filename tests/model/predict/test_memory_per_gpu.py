"""Memory per GPU (model/predict/memory.py) against independent routes: the weights a GPU stores
equal the weights a step reads once every expert is touched (a second computation through the
operator table), closed forms for TP-replicated tensors, published KV sizes, and `max_batch` as
the boundary of `fits` after every optimization's memory hook."""

from __future__ import annotations

import pytest

from rooflens.model.ops.table import build_ops
from rooflens.model.optimizations._weights import linear_weight_elements_per_gpu
from rooflens.model.predict.api import make_pipeline, make_scenario
from rooflens.model.predict.memory import (
    absorbed_copy_params_per_gpu,
    kv_bytes_per_token,
    weights_bytes_per_gpu,
)
from rooflens.model.specs.params import count_params
from rooflens.model.specs.presets import get_model

# (model, tp, ep): KV heads replicated (tp > K), MLA's replicated down-projections and MoE
# routers (vLLM ReplicatedLinear), expert parallelism with and without shared experts.
LAYOUTS = [
    ("llama-2-7b", 1, 1),
    ("llama-3-70b", 16, 1),
    ("llama-3-8b", 16, 1),
    ("mixtral-8x7b", 16, 1),
    ("mixtral-8x7b", 2, 8),
    ("deepseek-v3", 8, 1),
    ("deepseek-v3", 2, 8),
]


@pytest.mark.parametrize("weight_dtype", ["bf16", "int4"])
@pytest.mark.parametrize(("model", "tp", "ep"), LAYOUTS)
def test_weights_stored_equal_weights_read_once_every_expert_is_touched(
    model: str, tp: int, ep: int, weight_dtype: str
) -> None:
    # Second route: a decode step whose batch touches every expert reads each stored weight
    # once, except the embedding table, of which it reads only the B rows it looks up.
    sc = make_scenario(model, "h100-sxm", tp=tp, ep=ep, weight_dtype=weight_dtype,
                       prompt_len=16, output_len=2)  # fmt: skip
    B = 1e6
    ops = build_ops(sc, "decode", B, 1.0, 17.0)
    read = sum(float(o.weight_bytes) * o.count for o in ops)
    embed_rows = B * sc.model.d_model * 2.0
    table = count_params(sc.model).embedding / tp * 2.0
    # MLA under quantized weights stores kv_b_proj at their dtype, which only prefill reads, and
    # the 16-bit W_UK / W_UV copies decode's absorbed bmm reads (model/ops/rows.py
    # per_head_gemm): the prefill step's kv_b_proj row is the part decode leaves unread
    if weight_dtype != "bf16" and sc.model.attention == "mla":
        prefill = {o.name: o for o in build_ops(sc, "prefill", 1.0, 16.0, 16.0)}
        read += float(prefill["attn.kv_b_proj"].weight_bytes) * prefill["attn.kv_b_proj"].count
    # Stored but not charged as operators: MLA's two latent RMSNorm weights (q_lora_rank +
    # kv_lora_rank per layer) and DeepSeek-V3's router bias (E per MoE layer), 1.6e-6 of it in
    # bf16, 2.1e-6 in int4 (the router and its bias stay 16-bit, model/ops/ffn_block.py).
    assert read - embed_rows + table == pytest.approx(weights_bytes_per_gpu(sc), rel=2.5e-6)


def test_llama3_70b_tp16_replicates_its_8_kv_heads() -> None:
    # Closed form (Megatron/vLLM QKVParallelLinear): 16 GPUs over 8 KV heads hold one KV head
    # each (replicated), 64/16 = 4 query heads, 1/16 of o_proj, the MLP, embedding and lm_head.
    D, H, Dh, F, V, L = 8192, 64, 128, 28672, 128256, 80
    per_layer = D * (H // 16) * Dh + 2 * D * Dh + (H // 16) * Dh * D + 3 * D * F // 16 + 2 * D
    expected = (L * per_layer + 2 * V * D // 16 + D) * 2
    sc = make_scenario("llama-3-70b", "h100-sxm", tp=16, output_len=1)
    assert weights_bytes_per_gpu(sc) == expected


def test_llama3_70b_tp4_weights_per_gpu() -> None:
    # Every linear layer, the embedding and lm_head split 4 ways; norms replicated; bf16.
    pc = count_params(get_model("llama-3-70b"))
    norms = pc.n_layers * pc.norms_per_layer + pc.final_norm
    sc = make_scenario("llama-3-70b", "h100-sxm", tp=4, output_len=1)
    assert weights_bytes_per_gpu(sc) == pytest.approx(((pc.total - norms) / 4 + norms) * 2)
    assert weights_bytes_per_gpu(sc) == pytest.approx(35.28e9, rel=1e-3)  # 70.55e9 · 2 / 4


def test_deepseek_v3_tp8_keeps_mla_down_projections_and_routers_whole() -> None:
    # vLLM deepseek_v2.py: q_a_proj, kv_a_proj_with_mqa (and their RMSNorms) and the MoE gate
    # are ReplicatedLinear: every TP rank holds them whole.
    m = get_model("deepseek-v3")
    D, tp = m.d_model, 8
    one = make_scenario(m, "h100-sxm", output_len=1, weight_dtype="bf16")
    eight = make_scenario(m, "h100-sxm", tp=tp, output_len=1, weight_dtype="bf16")
    replicated = m.n_layers * (
        D * m.q_lora_rank + m.q_lora_rank + D * (m.kv_lora_rank + m.qk_rope_head_dim)
        + m.kv_lora_rank
    ) + m.n_moe_layers * (D * m.n_experts + m.n_experts)  # fmt: skip
    pc = count_params(m)
    norms = pc.n_layers * pc.norms_per_layer + pc.final_norm
    split = pc.total - norms - replicated
    assert weights_bytes_per_gpu(one) == pytest.approx(pc.total * 2)
    assert weights_bytes_per_gpu(eight) == pytest.approx((split / tp + norms + replicated) * 2)


@pytest.mark.parametrize("kv_dtype", ["bf16", "fp8"])
@pytest.mark.parametrize("tp", [1, 8])
def test_deepseek_v3_mla_kv_bytes_per_token(kv_dtype: str, tp: int) -> None:
    # DeepSeek-V2 §2.1.3 / V3 config: the cache holds the 512-wide latent and the 64-wide rope
    # key per layer, shared by all heads, so TP replicates it: 61 · (512 + 64) · dtype bytes.
    sc = make_scenario(
        "deepseek-v3", "h100-sxm", tp=tp, kv_dtype=kv_dtype, output_len=1, weight_dtype="bf16"
    )
    expected = {"bf16": 70_272, "fp8": 35_136}[kv_dtype]
    assert kv_bytes_per_token(sc) == 61 * (512 + 64) * (2 if kv_dtype == "bf16" else 1) == expected


def test_linear_weights_per_gpu_follow_expert_parallelism() -> None:
    # Under --ep 8 a GPU stores 32 of DeepSeek-V3's 256 routed experts per layer, so the
    # weight-rewriting optimizations (quant, 2:4 sparsity) must count those, not all 256:
    # route 2 recovers the linear elements from memory.py's bf16 weight bytes.
    sc = make_scenario("deepseek-v3", "h100-sxm", tp=1, ep=8, output_len=1, weight_dtype="bf16")
    pc = count_params(sc.model)
    plain = pc.embedding + pc.lm_head + pc.n_layers * pc.norms_per_layer + pc.final_norm
    linear = weights_bytes_per_gpu(sc) / 2 - plain
    assert linear_weight_elements_per_gpu(sc) == pytest.approx(linear)
    dense = make_pipeline(sc).memory().weights_bytes
    saved = dense - make_pipeline(sc, ["sparsity-2:4"]).memory().weights_bytes
    assert saved == pytest.approx(linear * (1.0 - 0.125))  # half of 2 B dropped, 1/8 B metadata


@pytest.mark.parametrize(
    ("model", "opt", "batch"),
    [
        ("llama-3-70b", "offload:fraction=0.6", 8),
        ("llama-3-70b", "sparsity-2:4", 1),
        ("llama-2-13b", "quant:scheme=awq", 1),
        ("llama-2-13b", "medusa:heads=4", 1),
    ],
)
def test_max_batch_is_the_fit_boundary_after_memory_hooks(model: str, opt: str, batch: int) -> None:
    # `max_batch` must agree with `fits` re-priced at that batch and one more, whatever the
    # optimization did to the weights (offload moves them to the host, 2:4 halves them).
    def mem(b: int):  # type: ignore[no-untyped-def]
        sc = make_scenario(
            model, "h100-sxm", batch=b, prompt_len=2048, output_len=256, weight_dtype="bf16"
        )
        return make_pipeline(sc, [opt]).memory()

    first = mem(batch)
    best = first.max_batch
    assert best >= 1
    assert mem(best).fits
    assert not mem(best + 1).fits
    assert first.fits == (batch <= best)


@pytest.mark.parametrize(("quant", "copies"), [("bf16", False), ("w4a16", True), ("native", True)])
def test_mla_keeps_a_16_bit_copy_of_its_absorbed_projections_beside_quantized_weights(
    quant: str, copies: bool
) -> None:
    # vLLM's MLA backend dequantizes kv_b_proj at load into 16-bit W_UK / W_UV for decode's bmm
    # and keeps kv_b_proj for prefill; with bf16 weights they are views. DeepSeek-V3: 61 layers
    # of 512 (latent) x 128 heads x (128 nope + 128 v), at TP 8, 2 bytes: 256 MB a GPU
    sc = make_scenario("deepseek-v3", "h200", tp=8, quant=quant)
    expected = 61 * 512 * 128 * (128 + 128) / 8 if copies else 0.0
    assert absorbed_copy_params_per_gpu(sc) == expected
    assert absorbed_copy_params_per_gpu(sc) * 2 == pytest.approx(256e6 * copies, rel=0.03)
