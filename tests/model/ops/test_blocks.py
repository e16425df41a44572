"""The layer blocks of the operator table (model/ops/attention_block.py, ffn_block.py, emitted
through rows.py): each GEMM row is 2·M·N·K FLOPs and reads its N·K weights once (closed forms
from the model's dimensions, Llama 3 8B: D 4096, 32 query and 8 KV heads of 128, F 14336), TP
splits the columns, and a MoE's router and experts follow E, k and the routed tokens."""

from __future__ import annotations

import pytest

from rooflens.model.ops.table import build_ops
from rooflens.model.predict.api import make_scenario

B, T, L = 4.0, 1.0, 1000.0


def _rows(sc, **step):  # type: ignore[no-untyped-def]
    args = {"B": B, "T": T, "L": L} | step
    return {o.name: o for o in build_ops(sc, "decode", args["B"], args["T"], args["L"])}


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_attention_and_mlp_gemms_are_closed_forms(tp: int) -> None:
    sc = make_scenario("llama-3-8b", "h100-sxm", batch=4, tp=tp)
    m, n, rows = sc.model, B * T, _rows(sc)
    D, H, K, Dh, F = m.d_model, m.n_heads // tp, m.n_kv_heads // tp, m.head_dim, m.d_ff // tp
    assert (D, m.n_heads, m.n_kv_heads, Dh, m.d_ff) == (4096, 32, 8, 128, 14336)
    expected = {  # (N, K) of each GEMM: output columns per GPU, reduction depth
        "attn.qkv_proj": ((H + 2 * K) * Dh, D),
        "attn.o_proj": (D, H * Dh),
        "mlp.up_gate": (2 * F, D),  # gated: up and gate fused
        "mlp.down": (D, F),
    }
    for name, (N, Kd) in expected.items():
        op = rows[name]
        assert op.count == m.n_layers
        assert float(op.flops) == 2 * n * N * Kd, name
        assert float(op.weight_bytes) == N * Kd * 2, name  # bf16 weights read once


def test_mixture_of_experts_rows_follow_the_experts() -> None:
    sc = make_scenario("mixtral-8x7b", "h100-sxm", batch=4)
    m, rows = sc.model, _rows(sc)
    E, k, D, Fe = m.n_experts, m.experts_per_token, m.d_model, m.d_ff_expert
    assert (E, k) == (8, 2)
    assert float(rows["moe.router"].flops) == 2 * B * E * D
    experts = [o for name, o in rows.items() if name.startswith("moe.") and name != "moe.router"]
    # every routed token runs k gated experts: 2 · tokens · k · 3 · D · Fe
    assert sum(float(o.flops) for o in experts) == pytest.approx(2 * B * k * 3 * D * Fe)
    assert "mlp.up_gate" not in rows  # every layer is MoE


def test_expert_parallelism_adds_the_all_to_alls() -> None:
    dense = _rows(make_scenario("mixtral-8x7b", "h100-sxm", batch=4, tp=2))
    ep = _rows(make_scenario("mixtral-8x7b", "h100-sxm", batch=4, tp=2, ep=4))
    assert "ep.dispatch" not in dense and {"ep.dispatch", "ep.combine"} <= ep.keys()


@pytest.mark.parametrize("weight, act", [("int4", "bf16"), ("fp8", "fp8"), ("int8", "bf16")])
def test_the_router_stays_16_bit_under_quantization(weight: str, act: str) -> None:
    # engines build the router unquantized (vLLM mixtral.py gate: quant_config=None; gpt-oss:
    # a bf16 nn.Linear): E·D weights at 2 bytes, no kernel family, while the experts and the
    # attention projections take the quantized dtype
    sc = make_scenario("gpt-oss-20b", "h100-sxm", batch=4, weight_dtype=weight, act_dtype=act)
    rows, m = _rows(sc), sc.model
    router = rows["moe.router"]
    assert float(router.weight_bytes) == m.n_experts * m.d_model * 2
    assert "family" not in router.shape and router.call["weight_dtype"] == "bf16"
    assert rows["attn.qkv_proj"].call["weight_dtype"] == weight


@pytest.mark.parametrize("quant", ["w8a16", "w4a16", "w8a8-fp8", "fp8-block"])
def test_mla_absorbed_projections_run_16_bit_under_every_scheme(quant: str) -> None:
    # engines have no quantized bmm for MLA's absorbed W_UK and W_UV: vLLM keeps a 16-bit copy
    # of the dequantized kv_b_proj and runs them as a bf16 bmm (its MLA backend's
    # process_weights_after_loading); each of the 128 / TP heads maps nope 128 <-> latent 512
    sc = make_scenario("deepseek-v3", "b200", batch=4, tp=8, quant=quant)
    rows, m = _rows(sc), sc.model
    heads = m.n_heads // 8
    q_absorb, v_absorb = rows["attn.q_absorb"], rows["attn.v_absorb"]
    nope = m.head_dim - m.qk_rope_head_dim
    assert float(q_absorb.weight_bytes) == heads * nope * m.kv_lora_rank * 2  # bf16, read once
    assert float(v_absorb.weight_bytes) == heads * m.kv_lora_rank * m.v_head_dim * 2
    for op in (q_absorb, v_absorb):
        assert "family" not in op.shape and op.compute_dtype == "bf16", quant
    # the projections around them keep the scheme
    assert rows["attn.o_proj"].call["weight_dtype"] == sc.precision.weight_dtype != "bf16"
