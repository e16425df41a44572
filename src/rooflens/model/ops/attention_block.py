"""The token-mixing rows of a layer for the operator table (model/ops/table.py): grouped-query
attention (QKV projection, q/k norm, RoPE, one core row per window kind, output projection),
DeepSeek MLA (decompressed at prefill, weight-absorbed at decode) and a hybrid's Mamba mixers.
"""

from __future__ import annotations

from dataclasses import replace

from rooflens.model.ops.attention import attention_op, kv_positions
from rooflens.model.ops.mla import mla_decode_op, mla_prefill_op
from rooflens.model.ops.op import norm_op
from rooflens.model.ops.rows import StepRows
from rooflens.model.ops.ssm import mamba_ops


def attention(b: StepRows) -> None:
    m, B, T, L, tp = b.m, b.B, b.T, b.L, b.tp
    n = b.tokens
    Hg = m.n_heads // tp
    if m.attention == "mla":
        _mla_attention(b, Hg)
        return
    Kg = b.sc.kv_heads_per_gpu
    Dh = m.head_dim
    La = m.n_attention_layers  # a hybrid's Mamba layers have no attention (mamba)
    b.gemm("attn.qkv_proj", La, n, (Hg + 2 * Kg) * Dh, m.d_model)
    if m.qk_norm:  # Qwen3/Gemma 3: RMSNorm over each q and k head (no residual)
        rows = n * (Hg + Kg)  # one RMSNorm row per q and k head, width Dh
        act = b.sc.precision.act_dtype
        b.ops.append(norm_op("attn.qk_norm", b.phase, La, rows, Dh, act, 0.0, "rmsnorm"))
    if m.positional == "rope":
        elems = n * (Hg + Kg) * Dh
        b.elementwise("attn.rope", La, 3.0, elems, elems)
    p = b.sc.precision
    # one attn.core row per layer kind (model.window_layers): full and sliding layers of
    # gpt-oss or Gemma 3 attend over different spans; shape["window"] says which
    for window, layers in m.window_layers.items():
        attention = attention_op(
            b.phase,
            layers,
            B,
            T,
            L,
            Hg,
            Kg,
            Dh,
            p.act_dtype,
            p.kv_dtype,
            window,
            sm_count=b.sc.gpu.sm_count,
            write_kernel=True,  # engines write K/V to the paged cache in a kernel of its own
        )
        b.ops.append(replace(attention, shape={**attention.shape, "window": window}))
    b.gemm("attn.o_proj", La, n, m.d_model, Hg * Dh)


def mamba(b: StepRows) -> None:
    """A hybrid's Mamba mixers (model/ops/ssm.py), on the layers without attention."""
    if b.m.n_mamba_layers:
        b.ops += mamba_ops(b.sc, b.phase, b.B, b.T)


def _mla_prefill(b: StepRows, Hg: int) -> None:
    """MLA prefill as vLLM and SGLang run it: K and V decompressed from the latent by
    kv_b_proj (W_UK, W_UV) for every attended position, then standard multi-head attention
    with q·k over nope + rope dims and values of v_head_dim (DeepSeek-V2 §2.1.2); only the
    latent (kv_lora_rank + rope) is written to the cache. Absorption, which trades these
    GEMMs for wider attention, pays off only at decode, where it is used."""
    m, B, T, L = b.m, b.B, b.T, b.L
    n, D, R, rope = b.tokens, m.d_model, m.kv_lora_rank, m.qk_rope_head_dim
    Dqk, Dv = m.head_dim, m.value_head_dim
    _mla_q_and_latent(b, Hg)
    positions = kv_positions(L, m.sliding_window, T)
    b.gemm("attn.kv_b_proj", m.n_layers, B * positions, Hg * (Dqk - rope + Dv), R)
    p = b.sc.precision
    b.ops.append(mla_prefill_op(b.phase, m.n_layers, B, T, L, Hg, Dqk, Dv, R, rope,
                                p.act_dtype, p.kv_dtype, m.sliding_window,
                                b.sc.gpu.sm_count))  # fmt: skip
    b.gemm("attn.o_proj", m.n_layers, n, D, Hg * Dv)


def _mla_q_and_latent(b: StepRows, Hg: int) -> None:
    m, n, D = b.m, b.tokens, b.m.d_model
    if m.q_lora_rank:
        b.gemm("attn.q_a_proj", m.n_layers, n, m.q_lora_rank, D)
        b.gemm("attn.q_b_proj", m.n_layers, n, Hg * m.head_dim, m.q_lora_rank)
    else:
        b.gemm("attn.q_proj", m.n_layers, n, Hg * m.head_dim, D)
    b.gemm("attn.kv_a_proj", m.n_layers, n, m.kv_lora_rank + m.qk_rope_head_dim, D)


def _mla_attention(b: StepRows, Hg: int) -> None:
    """DeepSeek MLA in its weight-absorbed form (DeepSeek-V2 paper §2.1.2): attention runs on
    the cached latent (kv_lora_rank + rope dims, shared by all heads, replicated across TP).
    Used for decode and speculative verification; prefill decompresses (`_mla_prefill`)."""
    if b.phase == "prefill":
        _mla_prefill(b, Hg)
        return
    m, B, T, L = b.m, b.B, b.T, b.L
    n, D, R, rope = b.tokens, m.d_model, m.kv_lora_rank, m.qk_rope_head_dim
    nope, Dv = m.head_dim - rope, m.value_head_dim
    _mla_q_and_latent(b, Hg)
    b.per_head_gemm("attn.q_absorb", m.n_layers, Hg, R, nope)  # q_nope · W_UK per head
    p = b.sc.precision
    b.ops.append(
        mla_decode_op(
            b.phase,
            m.n_layers,
            B,
            T,
            L,
            Hg,
            R,
            rope,
            p.act_dtype,
            p.kv_dtype,
            m.sliding_window,
            b.sc.gpu.sm_count,
        )
    )
    b.per_head_gemm("attn.v_absorb", m.n_layers, Hg, Dv, R)
    b.gemm("attn.o_proj", m.n_layers, n, D, Hg * Dv)
