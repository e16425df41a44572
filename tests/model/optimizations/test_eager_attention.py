"""eager-attention against Dao et al. 2022 (Algorithm 0 and Theorem 2): the S² score traffic and
activation memory FlashAttention removes, FLOPs unchanged, and FlashAttention's tile IO model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stack_checks import named, predict, scenario, step_ops, total

from rooflens.hardware.presets import get_gpu
from rooflens.model.optimizations.eager_attention import flash_kv_rows_streamed, flash_tile_rows
from rooflens.model.predict.steps import Step

H, DH = 32, 128  # Llama-2-7B (MHA) and Llama-3-8B (GQA, 8 KV heads)


@pytest.mark.parametrize(("b", "t", "l"), [(1, 512.0, 512.0), (3, 1.0, 900.0), (2, 64.0, 64.0)])
def test_score_matrix_traffic_closed_form(b: int, t: float, l: float) -> None:
    sc = scenario(batch=b, prompt_len=512, output_len=2)
    step = Step("prefill" if t > 1 else "decode", float(b), t, l)
    # against unsplit FlashAttention: eager has no Flash-Decoding split (nor its combine)
    flash = named(step_ops(sc, ["unsplit-decode"], step), "attn.core")
    eager = named(step_ops(sc, ["eager-attention"], step), "attn.core")
    # write S, read S, write P, read P: 4 · B · H · T · L elements at 2 bytes (MHA: no repeat_kv)
    assert eager.act_bytes - flash.act_bytes == pytest.approx(4 * b * H * t * l * 2)
    assert eager.live_bytes - flash.live_bytes == pytest.approx(2 * b * H * t * l * 2)
    assert eager.flops == flash.flops


def test_flops_unchanged_everywhere() -> None:
    # The model's FLOPs are equal (Flash-Decoding's combine is vector work, `vector_flops`,
    # and the eager path has no split to combine).
    sc = scenario("llama-3-8b", batch=2, prompt_len=700, output_len=8)
    for step in (Step("prefill", 2.0, 700.0, 700.0), Step("decode", 2.0, 1.0, 705.0)):
        flash = step_ops(sc, [], step)
        eager = step_ops(sc, ["eager-attention"], step)
        assert total(eager, "flops") == total(flash, "flops")
        assert all(op.shape.get("combine_vector_flops", 0.0) == 0.0 for op in eager)


def test_gqa_eager_path_expands_kv_per_query_head() -> None:
    # Hugging Face repeat_kv: K and V expanded to H heads, written then read: B·L·2·Dh·H·2 elements
    sc = scenario("llama-3-8b", batch=2, prompt_len=900, output_len=2)
    step = Step("decode", 2.0, 1.0, 901.0)
    # against unsplit FlashAttention: eager has no Flash-Decoding split (nor its combine)
    flash = named(step_ops(sc, ["unsplit-decode"], step), "attn.core")
    eager = named(step_ops(sc, ["eager-attention"], step), "attn.core")
    scores = 4 * 2 * H * 1 * 901 * 2
    assert eager.act_bytes - flash.act_bytes == pytest.approx(scores + 2 * 901 * 2 * DH * H * 2 * 2)


def test_s_squared_activation_memory_grows_quadratically() -> None:
    def activations(P: int, opts: list[str]) -> float:
        return predict(scenario(prompt_len=P, output_len=2), opts).memory.activation_bytes

    flash_growth = activations(2048, []) / activations(1024, [])
    assert flash_growth == pytest.approx(2.0, rel=0.01)  # linear in P
    for P in (1024, 2048):
        # the peak is the attention op, holding S and P (2 · H · P² at 2 bytes), + the residual
        sc = scenario(prompt_len=P, output_len=2)
        core = named(step_ops(sc, ["eager-attention"], Step("prefill", 1.0, P, P)), "attn.core")
        assert core.live_bytes > 2 * H * P**2 * 2
        residual = 2 * P * 4096 * 2
        assert activations(P, ["eager-attention"]) == pytest.approx(core.live_bytes + residual)


def test_eager_prefill_is_slower() -> None:
    sc = scenario(batch=4, prompt_len=2048, output_len=2)
    assert predict(sc, ["eager-attention"]).ttft_s > predict(sc).ttft_s


def test_flash_tile_rows_from_sram() -> None:
    # Dao et al. Algorithm 1: Br = min(⌈M/4d⌉, d), M in elements
    h100 = get_gpu("h100-sxm")  # 228 KiB → 116,736 fp16 elements → ⌈228⌉ capped at d = 128
    assert flash_tile_rows(h100, 128, 2.0) == 128
    assert flash_tile_rows(h100, 256, 2.0) == 114
    small = h100.model_copy(update={"smem_per_sm_bytes": 32768.0})
    assert flash_tile_rows(small, 64, 2.0) == 64


@pytest.mark.parametrize("n", [256, 1024, 4096])
def test_flash_kv_traffic_is_theta_n2_d2_over_m(n: int) -> None:
    # Theorem 2: K/V HBM accesses Θ(N²d²/M); with Br = M/4d exactly, Tr·N·d = 4N²d²/M.
    d, m = 64, 16384  # elements of SRAM
    tile = flash_tile_rows(
        get_gpu("h100-sxm").model_copy(update={"smem_per_sm_bytes": m * 2.0}), d, 2.0
    )
    rows = flash_kv_rows_streamed(n, n, tile, causal=False)
    assert rows * d == pytest.approx(4 * n**2 * d**2 / m)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5000), st.integers(0, 5000), st.sampled_from([16, 64, 128]))
def test_causal_tile_sum_matches_brute_force(t: int, extra: int, tile: int) -> None:
    L = t + extra
    tiles = -(-t // tile)
    brute = sum(min(L, L - t + i * tile) for i in range(1, tiles + 1))
    assert flash_kv_rows_streamed(t, L, tile) == pytest.approx(brute)
    grid = flash_kv_rows_streamed(np.array([t, t]), np.array([L, L]), tile)
    assert np.allclose(grid, brute)


def test_note_reports_both_io_counts() -> None:
    pred = predict(scenario(prompt_len=1024, output_len=2), ["eager-attention"])
    assert any("eager-attention: prefill moves" in n for n in pred.notes)
