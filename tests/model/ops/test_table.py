"""The operator table (model/ops/table.py, model/ops/attention.py) against independent routes:
per-head sums for MLA's batched products, brute-force position sets for windowed attention,
closed forms for shared experts and norms, and hand-computed decode steps of published models."""

from __future__ import annotations

import pytest

from rooflens.model.ops.attention import attended_keys, attention_op
from rooflens.model.ops.op import Op, gemm_op
from rooflens.model.ops.table import build_ops
from rooflens.model.predict.api import make_scenario
from rooflens.model.predict.memory import kv_bytes_per_token
from rooflens.model.specs.params import count_params
from rooflens.model.specs.presets import get_model


def named(ops: list[Op], name: str) -> Op:
    found = [op for op in ops if op.name == name]
    assert len(found) == 1, f"{name}: {len(found)} ops"
    return found[0]


@pytest.mark.parametrize(("phase", "B", "T", "L"), [("decode", 64.0, 1.0, 900.0),
                                                    ("verify", 2.0, 5.0, 512.0)])  # fmt: skip
@pytest.mark.parametrize("tp", [1, 8])
def test_mla_absorbed_products_are_one_gemm_per_head(
    phase: str, B: float, T: float, L: float, tp: int
) -> None:
    # DeepSeek-V2 §2.1.2 (weight absorption): q_nope·W_UK and o_latent·W_UV are batched over
    # the heads, each head with its own [n, K]·[K, N] product. Route 2: the sum of Hg GEMMs.
    m = get_model("deepseek-v3")
    sc = make_scenario(m, "h100-sxm", tp=tp, prompt_len=1024, output_len=2, weight_dtype="bf16")
    ops = build_ops(sc, phase, B, T, L)
    Hg, n = m.n_heads // tp, B * T
    nope, R, Dv = m.head_dim - m.qk_rope_head_dim, m.kv_lora_rank, m.value_head_dim
    for name, N, K in (("attn.q_absorb", R, nope), ("attn.v_absorb", Dv, R)):
        one_head = gemm_op(name, phase, m.n_layers, n, N, K, "bf16", "bf16")
        op = named(ops, name)
        for field in ("flops", "weight_bytes", "act_bytes", "live_bytes"):
            assert getattr(op, field) == pytest.approx(Hg * getattr(one_head, field)), field


def test_mla_attention_reads_the_new_latent_before_caching_it() -> None:
    # As for K/V heads (attention_op): the T new latent rows are read from kv_a_proj's output
    # and written to the cache; the cache is then read over all L positions (new ones included).
    m = get_model("deepseek-v3")
    sc = make_scenario(m, "h100-sxm", tp=8, prompt_len=1024, output_len=2, weight_dtype="bf16")
    B, T, L = 16.0, 1.0, 1000.0
    core = named(build_ops(sc, "decode", B, T, L), "attn.core")
    Hg, width, R = m.n_heads // 8, m.kv_lora_rank + m.qk_rope_head_dim, m.kv_lora_rank
    n = B * T
    # Plus Flash-Decoding's partials (FlashMLA splits the KV too): 16 programs on 132 SMs want
    # ceil(132 / 16) = 9 splits, capped at one per 128 keys, N = 1000 / 128; N fp32 partial
    # outputs and log-sum-exps per query head, written then read back.
    combine = 2 * n * Hg * (L / 128) * (width + 1) * 4
    q_o_new = (n * Hg * width + n * Hg * R + n * width) * 2
    assert core.act_bytes == pytest.approx(q_o_new + combine)
    assert core.kv_bytes == pytest.approx((B * L + n) * width * 2)
    assert core.flops == pytest.approx(2 * B * Hg * L * (width + R))


def window_union(T: int, L: int, W: int) -> int:
    """Distinct key positions the queries at L−T+1..L attend, each its last W (all if W = 0)."""
    keys: set[int] = set()
    for p in range(L - T + 1, L + 1):
        keys.update(range(max(1, p - W + 1) if W else 1, p + 1))
    return len(keys)


@pytest.mark.parametrize(
    ("T", "L", "W"),
    [(1, 50, 8), (20, 20, 8), (5, 30, 8), (3, 3, 8), (9, 40, 0), (64, 200, 16), (4, 4, 0)],
)
def test_windowed_attention_reads_every_position_some_query_attends(T: int, L: int, W: int) -> None:
    # Mistral 7B (Jiang et al. 2023) §2: a query at p attends p−W+1..p. A prefill or chunk of T
    # queries therefore reads the union of their windows, min(L, T + W − 1) positions, from
    # the cache, not just the last W. Route 2: the position sets, enumerated.
    B, H, K, Dh = 2, 8, 2, 16
    op = attention_op("x", 1, float(B), float(T), float(L), H, K, Dh, "bf16", "bf16", window=W)
    read = B * window_union(T, L, W) * 2 * K * Dh * 2
    written = B * T * 2 * K * Dh * 2
    assert op.kv_bytes == read + written
    causal_pairs = sum(min(p, W) if W else p for p in range(L - T + 1, L + 1))
    assert attended_keys(float(T), float(L), W) == causal_pairs


def test_mistral_prefill_longer_than_its_window_reads_the_whole_prompt() -> None:
    sc = make_scenario("mistral-7b", "h100-sxm", prompt_len=8192, output_len=2)
    core = named(build_ops(sc, "prefill", 1.0, 8192.0, 8192.0), "attn.core")
    per_token = kv_bytes_per_token(sc) / sc.model.n_layers
    assert core.kv_bytes == pytest.approx((8192 + 8192) * per_token)  # read all, write all
    decode = named(build_ops(sc, "decode", 1.0, 1.0, 8192.0), "attn.core")
    assert decode.kv_bytes == pytest.approx((4096 + 1) * per_token)  # the window, then 1 write


@pytest.mark.parametrize("model", ["gpt-neox-20b", "phi-2", "llama-2-7b", "opt-13b"])
def test_norm_weights_read_per_step_are_the_stored_norms(model: str) -> None:
    # GPT-NeoX's parallel residual keeps two LayerNorms, x + attn(ln1(x)) + mlp(ln2(x)) (HF
    # GPTNeoXLayer); Phi-2 shares one. Route 2: params.py's norm count, 16-bit.
    sc = make_scenario(model, "h100-sxm", prompt_len=16, output_len=2, weight_dtype="bf16")
    ops = build_ops(sc, "decode", 1.0, 1.0, 17.0)
    read = sum(float(o.weight_bytes) * o.count for o in ops if o.kind == "norm")
    pc = count_params(sc.model)
    assert read == (pc.n_layers * pc.norms_per_layer + pc.final_norm) * 2


@pytest.mark.parametrize(("tp", "ep"), [(1, 1), (2, 1), (2, 8), (4, 8), (1, 8)])
def test_shared_experts_split_over_tp_like_the_dense_mlp(tp: int, ep: int) -> None:
    # The shared expert runs on every token of the TP group and its output joins the layer's
    # all-reduce (model/ops/table.py charges tp.all_reduce, not all_gather, when shared experts
    # exist),
    # so each TP rank holds 1/tp of it, as memory.py stores it, with or without EP.
    m = get_model("deepseek-v3")
    sc = make_scenario(
        m, "h100-sxm", tp=tp, ep=ep, prompt_len=16, output_len=2, weight_dtype="bf16"
    )
    ops = build_ops(sc, "decode", 4.0, 1.0, 17.0)
    width = m.n_shared_experts * m.d_ff_expert / tp
    assert named(ops, "moe.shared.up_gate").weight_bytes == 2 * width * m.d_model * 2
    assert named(ops, "moe.shared.down").weight_bytes == width * m.d_model * 2
    assert {o.name for o in ops if o.kind == "comm" and o.name.startswith("tp.")} <= {
        "tp.all_reduce"
    }


def test_llama2_7b_decode_step_reads_twice_the_params_plus_the_kv_cache() -> None:
    # Batch-1 decode reads every weight once (bf16: 2 bytes per parameter) except the
    # embedding table, of which it reads one row, plus the KV cache of L positions (the new
    # token's K/V included) and the new row written: ≈ 2·params + KV (JAX scaling book).
    sc = make_scenario("llama-2-7b", "a100-sxm-80gb", prompt_len=2000, output_len=2)
    pc = count_params(sc.model)
    L = 2001.0
    ops = build_ops(sc, "decode", 1.0, 1.0, L)
    weights = sum(float(o.weight_bytes) * o.count for o in ops)
    kv = sum(float(o.kv_bytes) * o.count for o in ops)
    assert weights == 2 * (pc.total - pc.embedding + 4096)
    assert kv == kv_bytes_per_token(sc) * (L + 1) == 2 * 32 * 4096 * 2 * (L + 1)
    total = sum(float(o.bytes) * o.count for o in ops)
    assert total == pytest.approx(2 * pc.total + kv_bytes_per_token(sc) * L, rel=0.02)


def test_mixtral_batch_1_decode_reads_the_active_parameters() -> None:
    # Mixtral 8x7B: 12.9e9 parameters active per token (anchors E9); at batch 1 a decode step
    # reads the weights of exactly the 2 routed experts per layer, i.e. the active parameters
    # (one embedding row instead of the table).
    sc = make_scenario("mixtral-8x7b", "h100-sxm", prompt_len=16, output_len=2)
    pc = count_params(sc.model)
    assert pc.active == pytest.approx(12.9e9, rel=5e-3)
    ops = build_ops(sc, "decode", 1.0, 1.0, 17.0)
    weights = sum(float(o.weight_bytes) * o.count for o in ops)
    assert weights == pytest.approx(2 * (pc.active - pc.embedding + 4096), rel=1e-12)
    flops = sum(float(o.flops) * o.count for o in ops if o.kind == "gemm")
    norms = pc.n_layers * pc.norms_per_layer + pc.final_norm  # weights of norm ops, no GEMM
    assert flops == pytest.approx(2 * (pc.active - pc.embedding - norms), rel=1e-12)


def test_decode_attention_is_charged_per_kv_head_also_when_tp_replicates_them() -> None:
    # LLM-Viewer's bug was charging decode KV reads per query head. Llama-3-70B at TP16: each
    # GPU holds 4 query heads and one (replicated) KV head, so it reads 1 head's K/V per layer.
    sc = make_scenario("llama-3-70b", "h100-sxm", tp=16, prompt_len=4000, output_len=2)
    core = named(build_ops(sc, "decode", 1.0, 1.0, 4001.0), "attn.core")
    assert core.kv_bytes == (4001 + 1) * 2 * 1 * 128 * 2
    assert core.flops == 2 * 4 * 4001 * 2 * 128  # FLOPs are per query head
    assert kv_bytes_per_token(sc) == 80 * 2 * 1 * 128 * 2


def test_edge_workloads_output_len_1_and_full_context() -> None:
    from rooflens.hardware.errors import RooflensError
    from rooflens.model.predict.api import run

    one = run(make_scenario("llama-2-7b", "a100-sxm-80gb", batch=1, prompt_len=4096,
                            output_len=1))  # fmt: skip
    assert one.tpot_s == 0.0 and one.e2e_s == one.ttft_s > 0  # DESIGN: TPOT over tokens 2..N
    assert one.output_tokens_per_s == pytest.approx(1 / one.ttft_s)
    full = run(make_scenario("llama-2-7b", "a100-sxm-80gb", prompt_len=4000, output_len=97))
    assert full.scenario.context_tokens == 4096 and full.tpot_s > 0
    with pytest.raises(RooflensError, match="max context"):
        make_scenario("llama-2-7b", "a100-sxm-80gb", prompt_len=4000, output_len=98)


def test_w8a8_reads_every_heads_input_of_an_absorbed_product_at_one_byte() -> None:
    # SmoothQuant (W8A8): X is read at 1 byte. For MLA's per-head q_absorb, X is Hg inputs of
    # n × nope, so the saving is Hg · n · nope · (2 − 1) bytes, not n · nope.
    from rooflens.model.predict.api import make_pipeline
    from rooflens.model.predict.steps import Step

    m = get_model("deepseek-v3")
    sc = make_scenario(m, "h100-sxm", tp=8, prompt_len=64, output_len=2, weight_dtype="bf16")
    B, Hg, nope, R = 32.0, m.n_heads // 8, m.head_dim - m.qk_rope_head_dim, m.kv_lora_rank
    ops = make_pipeline(sc, ["quant:scheme=smoothquant"]).step_ops(Step("decode", B, 1.0, 65.0))
    assert named(ops, "attn.q_absorb").act_bytes == Hg * B * (nope * 1 + R * 2)


@pytest.mark.parametrize("tp", [1, 8])
def test_mla_prefill_decompresses_the_latent_and_runs_multi_head_attention(tp: int) -> None:
    # vLLM/SGLang MLA prefill (DeepSeek-V2 §2.1.2 without absorption): kv_b_proj turns the
    # latent of every attended position into per-head K_nope and V; attention then costs
    # 2·(Dqk + Dv) FLOPs per head and attended key; only the latent goes to the cache.
    m = get_model("deepseek-v3")
    sc = make_scenario(m, "h100-sxm", tp=tp, prompt_len=4096, output_len=2, weight_dtype="bf16")
    B, S = 2.0, 4096.0
    ops = build_ops(sc, "prefill", B, S, S)
    names = {op.name for op in ops}
    assert "attn.q_absorb" not in names and "attn.v_absorb" not in names
    Hg, R, rope = m.n_heads // tp, m.kv_lora_rank, m.qk_rope_head_dim
    Dqk, Dv = m.head_dim, m.value_head_dim
    kv_b = named(ops, "attn.kv_b_proj")
    assert kv_b.shape == {"m": B * S, "n": Hg * (Dqk - rope + Dv), "k": R}
    core = named(ops, "attn.core")
    causal_keys = S * (S + 1) / 2
    assert core.flops == pytest.approx(2 * B * Hg * causal_keys * (Dqk + Dv))
    assert core.kv_bytes == pytest.approx(B * S * (R + rope) * 2)  # bf16 latent written once
    # Absorbed attention would cost 2·B·Hg·keys·(2R + rope): 3.4x more at this length.
    absorbed = 2 * B * Hg * causal_keys * (2 * R + rope)
    assert absorbed / core.flops == pytest.approx((2 * R + rope) / (Dqk + Dv))
