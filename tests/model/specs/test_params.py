"""Parameter counts: closed forms (E6), the torch meta-device route, and invariants."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rooflens.model.specs.params import count_params
from rooflens.model.specs.presets import get_model, model_ids
from rooflens.model.specs.spec import ModelSpec

HERE = Path(__file__).parent
# Lets `import torch_reference` (this folder's helper) work under any pytest import mode.
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


@pytest.fixture(scope="module")
def reference_count() -> Callable[[ModelSpec], int]:
    pytest.importorskip("torch", reason="torch is needed for the meta-device second route")
    from torch_reference import reference_param_count

    return reference_param_count


def _spec(**fields: Any) -> ModelSpec:
    base: dict[str, Any] = {
        "id": "t",
        "name": "t",
        "n_layers": 2,
        "d_model": 64,
        "n_heads": 4,
        "n_kv_heads": 4,
        "head_dim": 16,
        "d_ff": 176,
        "gated_mlp": True,
        "vocab_size": 101,
        "attention": "mha",
        "max_context": 128,
    }
    return ModelSpec.model_validate(base | fields)


def _gpt_style(L: int, d: int, H: int, V: int, ctx: int) -> ModelSpec:
    return _spec(
        family="gpt",
        n_layers=L,
        d_model=d,
        n_heads=H,
        n_kv_heads=H,
        head_dim=d // H,
        d_ff=4 * d,
        gated_mlp=False,
        activation="gelu",
        vocab_size=V,
        tied_embeddings=True,
        norm="layernorm",
        positional="learned",
        max_position_embeddings=ctx,
        linear_bias=True,
        max_context=ctx,
    )


# ---- E6: V·d + L·(12·d² + 13·d), LLM inference book ch. 20.1.2 --------------------------------


def _e6(spec: ModelSpec) -> int:
    V, d, L = spec.vocab_size, spec.d_model, spec.n_layers
    return V * d + L * (12 * d * d + 13 * d)


def test_e6_gpt3_175b() -> None:
    # The formula leaves out the learned position table and the final LayerNorm.
    spec = get_model("gpt3-175b")
    counts = count_params(spec)
    assert counts.total - counts.positional - counts.final_norm == _e6(spec)
    assert counts.positional == 2048 * 12288 and counts.final_norm == 2 * 12288


@settings(max_examples=50, deadline=None)
@given(
    L=st.integers(1, 48),
    H=st.integers(1, 32),
    head=st.integers(1, 128),
    V=st.integers(1, 60_000),
    ctx=st.integers(1, 4096),
)
def test_e6_holds_for_any_gpt_style_spec(L: int, H: int, head: int, V: int, ctx: int) -> None:
    spec = _gpt_style(L, H * head, H, V, ctx)
    counts = count_params(spec)
    assert counts.total - counts.positional - counts.final_norm == _e6(spec)


# ---- second route: sum(p.numel()) of the equivalent torch module on the meta device --------


@pytest.mark.slow
@pytest.mark.parametrize("model_id", model_ids())
def test_preset_count_matches_torch_module(
    model_id: str, reference_count: Callable[[ModelSpec], int]
) -> None:
    spec = get_model(model_id)
    assert reference_count(spec) == count_params(spec).total


@st.composite
def _random_specs(draw: st.DrawFn) -> ModelSpec:
    """Small valid specs of every family the torch reference knows."""
    family = draw(st.sampled_from(["llama", "qwen2", "mixtral", "gpt", "opt", "gpt-neox", "phi"]))
    H = draw(st.sampled_from([1, 2, 4, 8]))
    head = draw(st.integers(1, 24))
    d = H * head
    common: dict[str, Any] = {
        "family": family,
        "n_layers": draw(st.integers(1, 4)),
        "d_model": d,
        "n_heads": H,
        "head_dim": head,
        "d_ff": draw(st.integers(1, 300)),
        "vocab_size": draw(st.integers(1, 500)),
        "tied_embeddings": draw(st.booleans()),
        "max_context": 64,
    }
    if family in ("llama", "qwen2", "mixtral"):
        K = draw(st.sampled_from([k for k in (1, 2, 4, 8) if H % k == 0 and k <= H]))
        kind = "mha" if K == H else ("mqa" if K == 1 else "gqa")
        extra: dict[str, Any] = {"n_kv_heads": K, "attention": kind, "gated_mlp": True}
        if family == "qwen2":
            extra["qkv_bias"] = True
        elif family == "llama":
            extra["linear_bias"] = draw(st.booleans())
        else:
            E = draw(st.integers(1, 6))
            extra |= {
                "n_experts": E,
                "experts_per_token": draw(st.integers(1, E)),
                "d_ff_expert": draw(st.integers(1, 200)),
            }
        return _spec(**common, **extra)
    extra = {
        "n_kv_heads": H,
        "attention": "mha",
        "gated_mlp": False,
        "norm": "layernorm",
        "linear_bias": True,
        "parallel_block": family in ("gpt-neox", "phi"),
    }
    if family in ("gpt", "opt"):
        extra |= {"positional": "learned", "max_position_embeddings": draw(st.integers(1, 100))}
    return _spec(**common, **extra)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=_random_specs())
def test_random_spec_count_matches_torch_module(spec: ModelSpec) -> None:
    pytest.importorskip("torch", reason="torch is needed for the meta-device second route")
    from torch_reference import reference_param_count

    assert reference_param_count(spec) == count_params(spec).total


def test_mla_without_q_lora_matches_torch_module(
    reference_count: Callable[[ModelSpec], int],
) -> None:
    # DeepSeek-V2-Lite style: q_lora_rank absent, so a full q_proj (HF DeepseekV3Attention).
    spec = get_model("deepseek-v3").model_copy(
        update={"q_lora_rank": 0, "n_layers": 4, "n_experts": 16, "experts_per_token": 2}
    )
    assert reference_count(spec) == count_params(spec).total


# ---- invariants ----------------------------------------------------------------------------


@pytest.mark.parametrize("model_id", model_ids())
def test_active_equals_total_exactly_when_dense(model_id: str) -> None:
    spec = get_model(model_id)
    counts = count_params(spec)
    assert (counts.active == counts.total) == (not spec.is_moe)
    assert 0 < counts.active <= counts.total


def test_mixtral_active_drops_the_idle_experts() -> None:
    # 32 layers × (8 − 2) idle SwiGLU experts of 3·D·F each.
    spec = get_model("mixtral-8x7b")
    counts = count_params(spec)
    idle = 32 * (8 - 2) * 3 * 4096 * 14336
    assert counts.total - counts.active == idle


def test_tying_embeddings_saves_exactly_v_times_d() -> None:
    spec = get_model("llama-2-7b")
    tied = spec.model_copy(update={"tied_embeddings": True})
    assert count_params(spec).total - count_params(tied).total == 32000 * 4096


def test_fewer_kv_heads_only_shrink_k_and_v() -> None:
    # Llama-2-70B uses GQA with 8 KV heads; as MHA its k/v projections would be 8× wider.
    gqa = get_model("llama-2-70b")
    mha = gqa.model_copy(update={"n_kv_heads": 64, "attention": "mha"})
    per_layer = 2 * 8192 * (64 - 8) * 128
    assert count_params(mha).total - count_params(gqa).total == 80 * per_layer


def test_parallel_block_norms_follow_the_family() -> None:
    # Phi shares one LayerNorm (HF PhiDecoderLayer); GPT-NeoX keeps two (HF GPTNeoXLayer).
    assert count_params(get_model("phi-2")).norms_per_layer == 2 * 2560
    assert count_params(get_model("gpt-neox-20b")).norms_per_layer == 2 * 2 * 6144


def test_deepseek_router_carries_the_balancing_bias() -> None:
    # DeepSeek-V3 report §2.1.2: a bias per routed expert (HF e_score_correction_bias).
    assert count_params(get_model("deepseek-v3")).moe_router_per_layer == 256 * 7168 + 256
    assert count_params(get_model("mixtral-8x7b")).moe_router_per_layer == 8 * 4096


def test_tied_phi_head_keeps_its_bias(reference_count: Callable[[ModelSpec], int]) -> None:
    # HF PhiForCausalLM: lm_head = Linear(D, V, bias=True); tying shares only the weight.
    tied = get_model("phi-2").model_copy(update={"tied_embeddings": True})
    assert count_params(tied).lm_head == 51200
    assert reference_count(tied) == count_params(tied).total
