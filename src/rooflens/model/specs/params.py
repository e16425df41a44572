"""Parameter counts by component, total and active per token (closed forms from the shapes).

Cross-checked in tests against `sum(p.numel())` of equivalent torch modules built on the
`meta` device, and against the GPT closed form V·D + L·(12·D² + 13·D) (LLM inference book
ch. 20.1.2) and published model-card totals.
"""

from __future__ import annotations

from dataclasses import dataclass

from rooflens.model.specs.spec import ModelSpec
from rooflens.model.specs.vision import vision_params


@dataclass(frozen=True)
class ParamCount:
    """Parameters by component. `per_layer_*` are for one layer of that kind."""

    embedding: int
    positional: int
    lm_head: int
    final_norm: int
    attention_per_layer: int
    norms_per_layer: int
    dense_mlp_per_layer: int
    moe_router_per_layer: int
    expert_per_expert: int
    shared_experts_per_layer: int
    n_layers: int
    n_dense_layers: int
    n_moe_layers: int
    n_experts: int
    experts_per_token: int
    vision: int = 0  # vision encoder and projector (model/specs/vision.py)
    mamba_per_layer: int = 0  # a hybrid's Mamba mixer
    n_mamba_layers: int = 0  # layers with a Mamba mixer instead of attention

    @property
    def layers(self) -> int:
        attention_layers = self.n_layers - self.n_mamba_layers
        common = attention_layers * self.attention_per_layer + self.n_layers * self.norms_per_layer
        common += self.n_mamba_layers * self.mamba_per_layer
        dense = self.n_dense_layers * self.dense_mlp_per_layer
        moe = self.n_moe_layers * (
            self.moe_router_per_layer
            + self.shared_experts_per_layer
            + self.n_experts * self.expert_per_expert
        )
        return common + dense + moe

    @property
    def total(self) -> int:
        ends = self.embedding + self.positional + self.lm_head + self.final_norm
        return ends + self.layers + self.vision

    @property
    def active(self) -> int:
        """Parameters one token touches: only k routed experts of each MoE layer."""
        idle = (
            self.n_moe_layers * (self.n_experts - self.experts_per_token) * self.expert_per_expert
        )
        return self.total - idle


def norm_params(spec: ModelSpec, width: int) -> int:
    return 2 * width if spec.norm == "layernorm" else width


def mla_kv_b_params(spec: ModelSpec) -> int:
    """MLA's kv_b_proj, the latent's up-projection to every head's K (no-rope part) and V:
    kv_lora_rank × heads × (nope + v). Decode runs it absorbed, as W_UK and W_UV; 0 without MLA."""
    if spec.attention != "mla":
        return 0
    nope = spec.head_dim - spec.qk_rope_head_dim
    return spec.kv_lora_rank * spec.n_heads * (nope + spec.value_head_dim)


def attention_params(spec: ModelSpec) -> int:
    D, H = spec.d_model, spec.n_heads
    if spec.attention == "mla":
        rope = spec.qk_rope_head_dim
        if spec.q_lora_rank:
            q = D * spec.q_lora_rank + spec.q_lora_rank + spec.q_lora_rank * H * spec.head_dim
        else:
            q = D * H * spec.head_dim
        kv_a = D * (spec.kv_lora_rank + rope) + spec.kv_lora_rank  # + latent norm
        o = H * spec.value_head_dim * D
        return q + kv_a + mla_kv_b_params(spec) + o
    qkv = D * (spec.q_dim + 2 * spec.kv_dim)
    o = spec.q_dim * D
    qk_norm = 2 * spec.head_dim if spec.qk_norm else 0  # Qwen3Attention q_norm, k_norm
    sinks = H if spec.attention_sinks else 0  # GptOssAttention.sinks: one logit per head
    bias = 0
    if spec.linear_bias:
        bias = spec.q_dim + 2 * spec.kv_dim + D
    elif spec.qkv_bias:
        bias = spec.q_dim + 2 * spec.kv_dim
    return qkv + o + bias + qk_norm + sinks


def mlp_params(spec: ModelSpec, d_ff: int) -> int:
    """Weights of one MLP of intermediate size F: 3·D·F gated (SwiGLU), 2·D·F plain."""
    D = spec.d_model
    matrices = 3 if spec.gated_mlp else 2
    bias = ((matrices - 1) * d_ff + D) if spec.linear_bias else 0
    return matrices * D * d_ff + bias


def norms_per_block(spec: ModelSpec) -> int:
    """Norms per layer: one shared by a parallel block (GPT-J, Phi), four in Gemma 3, else two.

    GPT-NeoX's parallel residual keeps two LayerNorms, x + attn(ln1(x)) + mlp(ln2(x))
    (HF GPTNeoXLayer: input_layernorm and post_attention_layernorm).
    """
    if spec.family == "gemma3":  # sandwich norms: pre and post around attention and the MLP
        return 4  # HF Gemma3DecoderLayer: input, post_attention, pre_ and post_feedforward
    return 1 if spec.parallel_block and spec.family != "gpt-neox" else 2


def router_params(spec: ModelSpec) -> int:
    """Router weight E·D; DeepSeek-V3 and gpt-oss add a per-expert bias.

    DeepSeek-V3 report §2.1.2 (bias b_i in the top-k selection); HF MoEGate
    e_score_correction_bias, stored in the checkpoint. gpt-oss: GptOssTopKRouter is a Linear
    with bias (HF modeling_gpt_oss.py).
    """
    bias = spec.n_experts if spec.family in ("deepseek-v3", "gpt-oss") else 0
    return spec.d_model * spec.n_experts + bias


def count_params(spec: ModelSpec) -> ParamCount:
    D, V = spec.d_model, spec.vocab_size
    lm_bias = V if (spec.linear_bias and spec.family == "phi") else 0
    return ParamCount(
        embedding=V * D,
        positional=spec.max_position_embeddings * D if spec.positional == "learned" else 0,
        lm_head=(0 if spec.tied_embeddings else V * D) + lm_bias,  # a tied head keeps its bias
        final_norm=norm_params(spec, D),
        attention_per_layer=attention_params(spec),
        norms_per_layer=norm_params(spec, D) * norms_per_block(spec),
        dense_mlp_per_layer=mlp_params(spec, spec.d_ff),
        moe_router_per_layer=router_params(spec),
        expert_per_expert=mlp_params(spec, spec.d_ff_expert) if spec.is_moe else 0,
        shared_experts_per_layer=(
            mlp_params(spec, spec.d_ff_expert * spec.n_shared_experts)
            if spec.n_shared_experts
            else 0
        ),
        n_layers=spec.n_layers,
        n_dense_layers=spec.n_dense_layers,
        n_moe_layers=spec.n_moe_layers,
        n_experts=spec.n_experts,
        experts_per_token=spec.experts_per_token,
        vision=vision_params(spec.vision, D) if spec.vision else 0,
        mamba_per_layer=mamba_params(spec) if spec.n_mamba_layers else 0,
        n_mamba_layers=spec.n_mamba_layers,
    )


def mamba_params(spec: ModelSpec) -> int:
    """One Mamba mixer as HF JambaMambaMixer holds it (Gu & Dao 2023, §3.4), E = expand · D:
    in_proj D × 2E (x and the gate z), depthwise conv1d E·k + E bias, x_proj E × (R + 2N)
    (Δ, B, C), dt_proj R × E + E bias, A_log E × N, D_skip E, out_proj E × D, and Jamba's
    RMSNorms on Δ, B and C (R + 2N)."""
    D, E, N, R = spec.d_model, spec.ssm_inner, spec.ssm_state_size, spec.ssm_dt_rank
    k = spec.ssm_conv_kernel
    conv = E * k + E
    return D * 2 * E + conv + E * (R + 2 * N) + R * E + E + E * N + E + E * D + (R + 2 * N)


def linear_tensors(spec: ModelSpec) -> int:
    """Weight matrices of the linear layers, each a tensor with its own per-tensor scale under
    NVFP4 (HF checkpoint layout: q, k, v, o apart; MLA's q_a, q_b, kv_a, kv_b, o; gate, up, down
    or up, down per MLP; a router and every expert's matrices per MoE layer)."""
    mlp = 3 if spec.gated_mlp else 2
    attention = (4 + (1 if spec.q_lora_rank else 0)) if spec.attention == "mla" else 4
    moe = 1 + spec.n_experts * mlp + (mlp if spec.n_shared_experts else 0)
    mixers = spec.n_attention_layers * attention + spec.n_mamba_layers * 4  # in, x, dt, out
    return mixers + spec.n_dense_layers * mlp + spec.n_moe_layers * moe
