"""The e2e decoder (validate/e2e/decoder.py) against independent references: the logits of a
prefill followed by cached decode steps equal one full forward over the same tokens (the KV
cache, positions and masks are right); its parameters equal the closed forms of
model/specs/params.py and the HF-layout torch modules of tests/model/specs/torch_reference.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from rooflens.hardware.errors import RooflensError
from rooflens.model.specs.params import count_params
from rooflens.model.specs.presets import get_model
from rooflens.validate.e2e.decoder import Decoder

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_specs import PRESETS, REFUSED, TINY, WINDOW, shrink

# Lets `import torch_reference` (tests/model/specs helper) work under any pytest import mode.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model" / "specs"))


@pytest.mark.parametrize("preset", PRESETS)
def test_prefill_then_decode_equals_one_full_forward(preset):
    """20 tokens, past the test window of 8: sliding layers' masks, sinks and the cache agree
    between the prefill route, the cached decode route and one full forward."""
    spec = shrink(preset)
    torch.manual_seed(1)
    model = Decoder(spec, batch=2, capacity=24).init_weights(seed=3)
    tokens = torch.randint(0, spec.vocab_size, (2, 20))
    with torch.inference_mode():
        full = model(tokens, 0, all_logits=True)  # [B, 20, V], causal over every position
        steps = [model(tokens[:, :12], 0)[:, -1]]  # prefill logits: the last position only
        for i in range(12, 20):
            steps.append(model(tokens[:, i : i + 1], i)[:, -1])
    assert WINDOW < 12 and torch.isfinite(full).all() and full.std() > 0
    torch.testing.assert_close(torch.stack(steps, 1), full[:, 11:], rtol=1e-4, atol=1e-5)


def test_prefill_in_chunks_of_sequences_fills_the_same_cache():
    """The runner prefills a large batch a few sequences at a time (cache rows): the decode step
    after it sees the same cache as after one prefill of the whole batch."""
    spec = shrink("llama-3-8b")
    model = Decoder(spec, batch=3, capacity=12).init_weights()
    prompt, token = torch.randint(0, 97, (3, 10)), torch.randint(0, 97, (3, 1))
    with torch.inference_mode():
        whole = model(prompt, 0)
        after_whole = model(token, 10)
        parts = [model(prompt[rows], 0, rows=rows) for rows in (slice(0, 2), slice(2, 3))]
        after_parts = model(token, 10)
    torch.testing.assert_close(torch.cat(parts), whole)
    torch.testing.assert_close(after_parts, after_whole)


def test_sliding_window_limits_what_a_token_sees():
    """With a window of 5 the last token's logits ignore tokens 6+ positions back."""
    spec = shrink("mistral-7b", n_layers=1, sliding_window=5)
    model = Decoder(spec, batch=1, capacity=16).init_weights()
    a = torch.randint(0, spec.vocab_size, (1, 12))
    b = a.clone()
    b[0, :3] = (a[0, :3] + 1) % spec.vocab_size  # change tokens outside the window only
    with torch.inference_mode():
        torch.testing.assert_close(model(a, 0), model(b, 0))
        model(a[:, :11], 0)
        first = model(a[:, 11:], 11)
        model(b[:, :11], 0)
        torch.testing.assert_close(first, model(b[:, 11:], 11))


@pytest.mark.parametrize("preset", PRESETS)
def test_parameter_count_equals_the_closed_form_and_the_reference_modules(preset):
    from torch_reference import reference_param_count

    spec = get_model(preset)
    with torch.device("meta"):
        model = Decoder(spec, device="meta", capacity=8)
    count = sum(p.numel() for p in model.parameters())
    assert count == count_params(spec).total == reference_param_count(spec)


def _eager_attention_with_sinks(attn, x, sinks):  # type: ignore[no-untyped-def]
    """HF modeling_gpt_oss.py eager_attention_forward, written out: scores of q against the
    GQA-repeated keys, the causal and window mask, the head's sink logit as one more column of
    the softmax, that column dropped before the values."""
    m = attn.ctx.spec
    B, T, _ = x.shape
    q, k, v = torch.nn.functional.linear(x, attn.qkv.weight, attn.qkv.bias).split(attn.widths, -1)
    q = attn.rope(q.view(B, T, m.n_heads, m.head_dim), 0).transpose(1, 2)
    k = attn.rope(k.view(B, T, m.n_kv_heads, m.head_dim), 0).transpose(1, 2)
    v = v.view(B, T, m.n_kv_heads, m.head_dim).transpose(1, 2)
    group = m.n_heads // m.n_kv_heads
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = q @ k.transpose(-1, -2) / m.head_dim**0.5  # [B, H, T, T]
    pos = torch.arange(T)
    masked = (pos[None, :] > pos[:, None]) | (pos[:, None] - pos[None, :] >= attn.window)
    scores = scores.masked_fill(masked if attn.window else pos[None, :] > pos[:, None], -torch.inf)
    column = sinks.view(1, -1, 1, 1).expand(B, -1, T, 1)
    probs = torch.softmax(torch.cat((scores, column), -1), -1)[..., :-1]
    o = (probs @ v).transpose(1, 2).reshape(B, T, -1)
    return torch.nn.functional.linear(o, attn.o_proj.weight, attn.o_proj.bias)


@pytest.mark.parametrize("kind", ["sliding", "full"])
def test_attention_sinks_match_gpt_oss_eager_attention(kind):
    """The sink as a virtual key inside one fused attention call equals HF's explicit softmax
    over [scores, sink]; without the sink column the output differs (the test has teeth)."""
    spec = shrink("gpt-oss-20b", n_layers=1, layer_types=(kind,))
    model = Decoder(spec, batch=2, capacity=24).init_weights(seed=5)
    attn = model.layers[0].attn
    x = torch.randn(2, 20, spec.d_model)
    with torch.inference_mode():
        got = attn(x, 0)
        want = _eager_attention_with_sinks(attn, x, attn.sinks)
        without = _eager_attention_with_sinks(attn, x, torch.full_like(attn.sinks, -torch.inf))
    assert attn.window == (WINDOW if kind == "sliding" else 0)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(got, without, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize(("preset", "normed"), [("qwen3-8b", True), ("llama-3-8b", False)])
def test_qk_norm_makes_attention_blind_to_the_scale_of_q_and_k(preset, normed):
    """RMSNorm over each q and k head (Qwen3Attention q_norm/k_norm) cancels a scale on the
    q and k projections; without it the scores, and so the logits, change."""
    spec = shrink(preset, n_layers=1)
    model = Decoder(spec, batch=1, capacity=24).init_weights()
    tokens = torch.randint(0, spec.vocab_size, (1, 12))
    qk_rows = sum(model.layers[0].attn.widths[:2])
    with torch.inference_mode():
        before = model(tokens, 0)
        model.layers[0].attn.qkv.weight[:qk_rows] *= 30.0
        after = model(tokens, 0)
    assert torch.allclose(before, after, rtol=1e-3, atol=1e-3) == normed  # eps: not exact


@pytest.mark.parametrize("preset", ["qwen3-30b-a3b", "gpt-oss-20b", "mixtral-8x7b"])
def test_moe_block_matches_hf_routing_token_by_token(preset):
    """HF's routing written per token (GptOssTopKRouter: logits + bias, top-k of the logits, a
    softmax over those k; Mixtral/Qwen3-MoE the same with no bias): the block's sorted,
    batched expert loop gives each token the same k experts and weights."""
    spec = shrink(preset, n_layers=1)
    model = Decoder(spec, batch=1, capacity=8).init_weights(seed=2)
    moe = model.layers[0].mlp
    torch.nn.init.normal_(moe.router.weight, std=0.5)  # routing far from ties
    if moe.router.bias is not None:
        torch.nn.init.normal_(moe.router.bias)
    x = torch.randn(1, 7, spec.d_model)
    act = torch.nn.functional.silu
    with torch.inference_mode():
        got = moe(x)
        want = torch.zeros_like(x)
        for t in range(7):
            logits = torch.nn.functional.linear(x[0, t], moe.router.weight, moe.router.bias)
            top, experts = torch.topk(logits, spec.experts_per_token)
            for w, e in zip(torch.softmax(top, -1), experts.tolist(), strict=True):
                gate, up = (moe.w_up[e] @ x[0, t] + moe.b_up[e] if moe.b_up is not None
                            else moe.w_up[e] @ x[0, t]).chunk(2)  # fmt: skip
                y = moe.w_down[e] @ (act(gate) * up)
                want[0, t] += w * (y + (moe.b_down[e] if moe.b_down is not None else 0))
    assert moe.router.out_features == spec.n_experts and spec.experts_per_token > 1
    assert (moe.router.bias is not None) == (spec.family == "gpt-oss")
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)


def test_weights_are_random_in_the_asked_dtype_and_tied_heads_share_them():
    spec = shrink("gpt3-175b", tied_embeddings=True)
    model = Decoder(spec, dtype=torch.bfloat16, capacity=8).init_weights()
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert model.lm_head.weight is model.embed.weight
    w = model.layers[0].attn.qkv.weight.float()
    assert 0.015 < w.std() < 0.025 and w.abs().max() > 0


def test_tiny_model_file_is_the_ci_model():
    spec = get_model(str(TINY))
    assert (spec.n_layers, spec.d_model) == (2, 256)


@pytest.mark.parametrize("preset", REFUSED)
def test_models_it_cannot_build_are_refused_in_one_line(preset):
    with pytest.raises(RooflensError, match=r"MLA|Mamba") as refused:
        Decoder(get_model(preset), device="meta")
    assert "\n" not in str(refused.value)


def test_mla_and_mamba_presets_are_among_the_refused():
    assert {"deepseek-v3", "jamba-v0.1"} <= set(REFUSED)


@pytest.mark.parametrize("preset", ["llama-3-8b", "opt-6.7b", "gemma-3-1b"])
def test_triton_backend_routes_through_kernels_and_matches_torch(preset, monkeypatch):
    """--impl triton's routing (GEMM, RMSNorm, flash prefill, split decode attention; torch for
    LayerNorm) gives torch's logits. Without a GPU the kernels run in Triton's interpreter
    (tests/conftest.py sets TRITON_INTERPRET), at fp32 and test-sized shapes."""
    from collections import Counter

    from rooflens.kernels import decode_attention, flash_attention, gemm, rmsnorm
    from rooflens.validate.e2e.backend import TritonBackend

    calls: Counter[str] = Counter()
    for module, name in (
        (gemm, "gemm"),
        (rmsnorm, "rmsnorm"),
        (flash_attention, "flash_attention"),
        (decode_attention, "decode_attention"),
    ):
        kernel = getattr(module, name)
        monkeypatch.setattr(
            module, name, lambda *a, _k=kernel, _n=name, **kw: (calls.update([_n]), _k(*a, **kw))[1]
        )

    device = "cuda" if torch.cuda.is_available() else "cpu"
    spec = shrink(preset, head_dim=16, d_model=64, n_layers=2)
    tokens = torch.randint(0, spec.vocab_size, (2, 9), device=device)
    out = {}
    for name, backend in (("torch", None), ("triton", TritonBackend())):
        model = Decoder(spec, batch=2, capacity=16, device=device, backend=backend)
        model.init_weights()
        with torch.inference_mode():
            out[name] = (model(tokens[:, :8], 0), model(tokens[:, 8:], 8))
    for triton_logits, torch_logits in zip(out["triton"], out["torch"], strict=True):
        torch.testing.assert_close(triton_logits, torch_logits, rtol=1e-4, atol=1e-5)
    assert calls["gemm"] and calls["flash_attention"] and calls["decode_attention"]
    assert bool(calls["rmsnorm"]) == (spec.norm == "rmsnorm")  # LayerNorm stays in torch


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16])
@pytest.mark.parametrize("preset", ["llama-3-8b", "gemma-3-1b"])
def test_triton_backend_and_cuda_graph_match_torch_on_a_gpu(dtype, preset):
    """Gemma 3 adds q/k norms and a sliding layer whose window (8) the 9 tokens exceed."""
    from rooflens.validate.e2e.backend import TritonBackend
    from rooflens.validate.e2e.measure import cuda_graph

    spec = shrink(preset, head_dim=16, d_model=64)
    tokens = torch.randint(0, spec.vocab_size, (2, 9), device="cuda")
    out = {}
    for name, backend in (("torch", None), ("triton", TritonBackend())):
        model = Decoder(
            spec, batch=2, capacity=16, dtype=dtype, device="cuda", backend=backend
        ).init_weights()
        with torch.inference_mode():
            model(tokens[:, :8], 0)
            eager = model(tokens[:, 8:], 8).clone()
            result = {}
            replay = cuda_graph(lambda m=model, r=result: r.update(y=m(tokens[:, 8:], 8)))
            replay()
            torch.testing.assert_close(result["y"], eager)
        out[name] = eager
    torch.testing.assert_close(out["triton"], out["torch"], rtol=1.6e-2, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("preset", ["gpt-oss-20b", "gemma-3-1b"])
def test_sinks_and_windows_give_the_cpus_logits_on_a_gpu(preset):
    """The sink's virtual key (K wider than V, an explicit mask) and sliding masks through
    CUDA's SDPA kernels: the same weights give the CPU's logits, prefill and decode."""
    spec = shrink(preset)
    model = Decoder(spec, batch=2, capacity=24).init_weights(seed=3)
    tokens = torch.randint(0, spec.vocab_size, (2, 20))
    out = {}
    for device in ("cpu", "cuda"):
        model = model.to(device)
        with torch.inference_mode():
            prefill = model(tokens[:, :19].to(device), 0)
            out[device] = (prefill, model(tokens[:, 19:].to(device), 19))
    for gpu, cpu in zip(out["cuda"], out["cpu"], strict=True):
        torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-3, atol=1e-4)
