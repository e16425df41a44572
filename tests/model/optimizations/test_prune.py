"""Structured pruning (model/optimizations/prune.py)."""

from __future__ import annotations

import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations.prune import Prune, pruned_spec
from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.memory import kv_bytes_per_token
from rooflens.model.specs.params import attention_params, count_params, mlp_params
from rooflens.model.specs.presets import get_model


def test_zero_is_the_identity() -> None:
    sc = make_scenario("llama-3-8b", "h100-sxm", batch=2, prompt_len=128, output_len=16)
    assert run(sc, [Prune()]).to_dict() == run(sc).to_dict()


def test_gqa_removes_whole_query_groups() -> None:
    spec = pruned_spec(get_model("llama-3-70b"), heads=0.25, ffn=0.0)
    assert (spec.n_heads, spec.n_kv_heads, spec.attention) == (48, 6, "gqa")
    mha = pruned_spec(get_model("llama-2-7b"), heads=0.25, ffn=0.5)
    assert (mha.n_heads, mha.n_kv_heads, mha.d_ff) == (24, 24, 5504)


def test_parameters_and_kv_shrink_by_the_removed_units() -> None:
    base = get_model("llama-2-7b")
    sc = make_scenario(base, "a100-sxm-80gb")
    pruned = make_pipeline(sc, [Prune(heads=0.25, ffn=0.5)]).scenario
    D, Dh, L = 4096, 128, 32
    # Second route: per layer, q/k/v/o lose 4·D·(8 heads·Dh); the MLP loses 3·D·(F − F').
    removed = L * (4 * D * 8 * Dh + 3 * D * (11008 - 5504))
    assert count_params(base).total - count_params(pruned.model).total == removed
    assert attention_params(pruned.model) == 4 * D * 24 * Dh
    assert mlp_params(pruned.model, pruned.model.d_ff) == 3 * D * 5504
    assert kv_bytes_per_token(pruned) == pytest.approx(0.75 * kv_bytes_per_token(sc))


def test_pruned_model_is_faster() -> None:
    sc = make_scenario("llama-2-7b", "a100-sxm-80gb", batch=8, prompt_len=256, output_len=32)
    base, pruned = run(sc), run(sc, [Prune(heads=0.25, ffn=0.5)])
    assert pruned.tpot_s < base.tpot_s and pruned.ttft_s < base.ttft_s
    assert any("fewer" in n for n in pruned.notes)


def test_pruned_heads_must_still_split_over_tp() -> None:
    sc = make_scenario("llama-2-7b", "a100-sxm-80gb", tp=8)
    with pytest.raises(RooflensError, match="--tp 8"):
        make_pipeline(sc, [Prune(heads=0.3)])
