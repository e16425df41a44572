"""Second route to parameter counts: each family's real module tree, built on the meta device.

Written from the architectures (the papers and Hugging Face `modeling_*.py` module layouts named
below), not from `model/specs/params.py`, so `sum(p.numel())` here is an independent check of the
closed forms. The meta device allocates no memory, so a 671B model builds in seconds.
Shared (tied) parameters are counted once, as `nn.Module.parameters()` deduplicates them.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from rooflens.model.specs.spec import ModelSpec


def reference_param_count(spec: ModelSpec) -> int:
    """sum(p.numel()) over the torch module equivalent to `spec`."""
    return sum(p.numel() for p in build_reference(spec).parameters())


def build_reference(spec: ModelSpec) -> nn.Module:
    try:
        builder = _BUILDERS[spec.family]
    except KeyError:
        raise ValueError(f"no torch reference for family '{spec.family}'") from None
    with torch.device("meta"):
        return builder(spec)


def _norm(spec: ModelSpec, width: int) -> nn.Module:
    return nn.LayerNorm(width) if spec.norm == "layernorm" else nn.RMSNorm(width)


def _lm_head(spec: ModelSpec, embed: nn.Embedding, bias: bool = False) -> nn.Linear:
    head = nn.Linear(spec.d_model, spec.vocab_size, bias=bias)
    if spec.tied_embeddings:
        head.weight = embed.weight
    return head


class _SwiGLU(nn.Module):
    """down(act(gate(x)) * up(x)) (Shazeer 2020); LlamaMLP / Mixtral w1, w3, w2."""

    def __init__(self, d_model: int, d_ff: int, bias: bool = False) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=bias)
        self.up_proj = nn.Linear(d_model, d_ff, bias=bias)
        self.down_proj = nn.Linear(d_ff, d_model, bias=bias)


class _TwoLayerMLP(nn.Module):
    """fc2(act(fc1(x))): GPT-2/3, OPT, GPT-NeoX, Phi."""

    def __init__(self, d_model: int, d_ff: int, bias: bool) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff, bias=bias)
        self.fc2 = nn.Linear(d_ff, d_model, bias=bias)


class _SplitAttention(nn.Module):
    """Separate q/k/v/o projections (Llama, Mistral, Qwen2, OPT, Phi)."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        D, q_width, kv_width = (
            spec.d_model,
            spec.n_heads * spec.head_dim,
            spec.n_kv_heads * spec.head_dim,
        )
        qkv_bias = spec.linear_bias or spec.qkv_bias
        self.q_proj = nn.Linear(D, q_width, bias=qkv_bias)
        self.k_proj = nn.Linear(D, kv_width, bias=qkv_bias)
        self.v_proj = nn.Linear(D, kv_width, bias=qkv_bias)
        self.o_proj = nn.Linear(q_width, D, bias=spec.linear_bias)


class _MixtralSparseMoe(nn.Module):
    """MixtralSparseMoeBlock: router Linear(D, E, bias=False) and E SwiGLU experts."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.gate = nn.Linear(spec.d_model, spec.n_experts, bias=False)
        self.experts = nn.ModuleList(
            _SwiGLU(spec.d_model, spec.d_ff_expert) for _ in range(spec.n_experts)
        )


class _LlamaLayer(nn.Module):
    """LlamaDecoderLayer (and Mistral/Mixtral/Qwen2): two RMSNorms, attention, MLP or MoE."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.input_layernorm = _norm(spec, spec.d_model)
        self.self_attn = _SplitAttention(spec)
        self.post_attention_layernorm = _norm(spec, spec.d_model)
        if spec.is_moe:
            self.mlp: nn.Module = _MixtralSparseMoe(spec)
        else:  # LlamaMLP; mlp_bias puts a bias on all three
            self.mlp = _SwiGLU(spec.d_model, spec.d_ff, bias=spec.linear_bias)


class _LlamaForCausalLM(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(spec.vocab_size, spec.d_model)
        self.layers = nn.ModuleList(_LlamaLayer(spec) for _ in range(spec.n_layers))
        self.norm = _norm(spec, spec.d_model)
        self.lm_head = _lm_head(spec, self.embed_tokens)


class _GPT2Block(nn.Module):
    """GPT-2 Block (GPT-3 keeps it, Brown et al. 2020 §2.1): ln_1, fused c_attn, ln_2, MLP."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        D = spec.d_model
        self.ln_1 = _norm(spec, D)
        self.c_attn = nn.Linear(D, 3 * D, bias=spec.linear_bias)  # [D, q|k|v]
        self.attn_c_proj = nn.Linear(D, D, bias=spec.linear_bias)
        self.ln_2 = _norm(spec, D)
        self.mlp = _TwoLayerMLP(D, spec.d_ff, bias=spec.linear_bias)


class _GPT2LMHeadModel(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.wte = nn.Embedding(spec.vocab_size, spec.d_model)
        self.wpe = nn.Embedding(spec.max_position_embeddings, spec.d_model)
        self.h = nn.ModuleList(_GPT2Block(spec) for _ in range(spec.n_layers))
        self.ln_f = _norm(spec, spec.d_model)
        self.lm_head = _lm_head(spec, self.wte)


class _OPTDecoderLayer(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.self_attn = _SplitAttention(spec)
        self.self_attn_layer_norm = _norm(spec, spec.d_model)
        self.mlp = _TwoLayerMLP(spec.d_model, spec.d_ff, bias=spec.linear_bias)
        self.final_layer_norm = _norm(spec, spec.d_model)


class _OPTForCausalLM(nn.Module):
    """OPTDecoder: embed_tokens, embed_positions (its rows include OPT's offset of 2)."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(spec.vocab_size, spec.d_model)
        self.embed_positions = nn.Embedding(spec.max_position_embeddings, spec.d_model)
        self.layers = nn.ModuleList(_OPTDecoderLayer(spec) for _ in range(spec.n_layers))
        self.final_layer_norm = _norm(spec, spec.d_model)
        self.lm_head = _lm_head(spec, self.embed_tokens)


class _GPTNeoXLayer(nn.Module):
    """GPTNeoXLayer: two LayerNorms even with use_parallel_residual; fused query_key_value."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        D = spec.d_model
        self.input_layernorm = _norm(spec, D)
        self.post_attention_layernorm = _norm(spec, D)
        self.query_key_value = nn.Linear(D, 3 * D, bias=spec.linear_bias)
        self.dense = nn.Linear(D, D, bias=spec.linear_bias)
        self.mlp = _TwoLayerMLP(D, spec.d_ff, bias=spec.linear_bias)


class _GPTNeoXForCausalLM(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.embed_in = nn.Embedding(spec.vocab_size, spec.d_model)
        self.layers = nn.ModuleList(_GPTNeoXLayer(spec) for _ in range(spec.n_layers))
        self.final_layer_norm = _norm(spec, spec.d_model)
        self.embed_out = _lm_head(spec, self.embed_in)


class _PhiDecoderLayer(nn.Module):
    """PhiDecoderLayer: one input_layernorm shared by the parallel attention and MLP."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.input_layernorm = _norm(spec, spec.d_model)
        self.self_attn = _SplitAttention(spec)  # q_proj, k_proj, v_proj, dense
        self.mlp = _TwoLayerMLP(spec.d_model, spec.d_ff, bias=spec.linear_bias)


class _PhiForCausalLM(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(spec.vocab_size, spec.d_model)
        self.layers = nn.ModuleList(_PhiDecoderLayer(spec) for _ in range(spec.n_layers))
        self.final_layernorm = _norm(spec, spec.d_model)
        self.lm_head = _lm_head(spec, self.embed_tokens, bias=True)  # Phi's lm_head has a bias


class _MLAttention(nn.Module):
    """DeepseekV3Attention (MLA, DeepSeek-V2 report §2.1): low-rank q and latent kv paths."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        D, H, rope = spec.d_model, spec.n_heads, spec.qk_rope_head_dim
        nope, v = spec.head_dim - rope, spec.value_head_dim
        if spec.q_lora_rank:
            self.q_a_proj = nn.Linear(D, spec.q_lora_rank, bias=False)
            self.q_a_layernorm = nn.RMSNorm(spec.q_lora_rank)
            self.q_b_proj = nn.Linear(spec.q_lora_rank, H * spec.head_dim, bias=False)
        else:
            self.q_proj = nn.Linear(D, H * spec.head_dim, bias=False)
        # [D -> latent c_kv | shared rope key]
        self.kv_a_proj_with_mqa = nn.Linear(D, spec.kv_lora_rank + rope, bias=False)
        self.kv_a_layernorm = nn.RMSNorm(spec.kv_lora_rank)
        self.kv_b_proj = nn.Linear(spec.kv_lora_rank, H * (nope + v), bias=False)
        self.o_proj = nn.Linear(H * v, D, bias=False)


class _DeepseekMoE(nn.Module):
    """DeepseekV3MoE: MoEGate (weight [E, D] + e_score_correction_bias [E]), E routed SwiGLU
    experts stored stacked as in transformers' fused MoE (gate_up_proj [E, 2F, D], down_proj
    [E, D, F]), and the shared experts fused into one SwiGLU of width n_shared * F."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        E, D, F = spec.n_experts, spec.d_model, spec.d_ff_expert
        self.gate_weight = nn.Parameter(torch.empty(E, D))
        self.e_score_correction_bias = nn.Parameter(torch.empty(E))
        self.gate_up_proj = nn.Parameter(torch.empty(E, 2 * F, D))
        self.down_proj = nn.Parameter(torch.empty(E, D, F))
        if spec.n_shared_experts:
            self.shared_experts = _SwiGLU(D, F * spec.n_shared_experts)


class _DeepseekV3Layer(nn.Module):
    def __init__(self, spec: ModelSpec, layer: int) -> None:
        super().__init__()
        self.input_layernorm = _norm(spec, spec.d_model)
        self.self_attn = _MLAttention(spec)
        self.post_attention_layernorm = _norm(spec, spec.d_model)
        dense = not spec.is_moe or layer < spec.first_dense_layers
        self.mlp = _SwiGLU(spec.d_model, spec.d_ff) if dense else _DeepseekMoE(spec)


class _DeepseekV3ForCausalLM(nn.Module):
    """The main model only: the MTP module (num_nextn_predict_layers) is not built."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(spec.vocab_size, spec.d_model)
        self.layers = nn.ModuleList(_DeepseekV3Layer(spec, i) for i in range(spec.n_layers))
        self.norm = _norm(spec, spec.d_model)
        self.lm_head = _lm_head(spec, self.embed_tokens)


class _Qwen3Attention(_SplitAttention):
    """Qwen3Attention: q/k/v/o without bias plus q_norm, k_norm = RMSNorm(head_dim)."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        self.q_norm = nn.RMSNorm(spec.head_dim)
        self.k_norm = nn.RMSNorm(spec.head_dim)


class _Qwen3Layer(nn.Module):
    """Qwen3DecoderLayer / Qwen3MoeDecoderLayer: RMSNorms, Qwen3 attention, SwiGLU or
    Qwen3MoeSparseMoeBlock (gate Linear(D, E, bias=False) and E Qwen3MoeMLP experts)."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.input_layernorm = _norm(spec, spec.d_model)
        self.self_attn = _Qwen3Attention(spec)
        self.post_attention_layernorm = _norm(spec, spec.d_model)
        if spec.is_moe:
            self.mlp: nn.Module = _MixtralSparseMoe(spec)
        else:
            self.mlp = _SwiGLU(spec.d_model, spec.d_ff)


class _Qwen3ForCausalLM(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(spec.vocab_size, spec.d_model)
        self.layers = nn.ModuleList(_Qwen3Layer(spec) for _ in range(spec.n_layers))
        self.norm = _norm(spec, spec.d_model)
        self.lm_head = _lm_head(spec, self.embed_tokens)


class _GptOssAttention(_SplitAttention):
    """GptOssAttention: q/k/v/o all with bias (attention_bias) and sinks, one logit per head."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        self.sinks = nn.Parameter(torch.empty(spec.n_heads))


class _GptOssMLP(nn.Module):
    """GptOssMLP: GptOssTopKRouter (weight [E, D], bias [E]) and GptOssExperts stored stacked:
    gate_up_proj [E, D, 2F] + bias [E, 2F], down_proj [E, F, D] + bias [E, D]."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        E, D, F = spec.n_experts, spec.d_model, spec.d_ff_expert
        self.router_weight = nn.Parameter(torch.empty(E, D))
        self.router_bias = nn.Parameter(torch.empty(E))
        self.gate_up_proj = nn.Parameter(torch.empty(E, D, 2 * F))
        self.gate_up_proj_bias = nn.Parameter(torch.empty(E, 2 * F))
        self.down_proj = nn.Parameter(torch.empty(E, F, D))
        self.down_proj_bias = nn.Parameter(torch.empty(E, D))


class _GptOssLayer(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.input_layernorm = _norm(spec, spec.d_model)
        self.self_attn = _GptOssAttention(spec)
        self.post_attention_layernorm = _norm(spec, spec.d_model)
        self.mlp = _GptOssMLP(spec)


class _GptOssForCausalLM(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(spec.vocab_size, spec.d_model)
        self.layers = nn.ModuleList(_GptOssLayer(spec) for _ in range(spec.n_layers))
        self.norm = _norm(spec, spec.d_model)
        self.lm_head = _lm_head(spec, self.embed_tokens)


class _Gemma3Layer(nn.Module):
    """Gemma3DecoderLayer: Qwen3-style attention (q_norm, k_norm), GeGLU MLP, and four
    RMSNorms: input, post_attention, pre_feedforward, post_feedforward."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        D = spec.d_model
        self.self_attn = _Qwen3Attention(spec)
        self.mlp = _SwiGLU(D, spec.d_ff)
        self.input_layernorm = _norm(spec, D)
        self.post_attention_layernorm = _norm(spec, D)
        self.pre_feedforward_layernorm = _norm(spec, D)
        self.post_feedforward_layernorm = _norm(spec, D)


class _Gemma3ForCausalLM(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(spec.vocab_size, spec.d_model)  # scaled by sqrt(D)
        self.layers = nn.ModuleList(_Gemma3Layer(spec) for _ in range(spec.n_layers))
        self.norm = _norm(spec, spec.d_model)
        self.lm_head = _lm_head(spec, self.embed_tokens)


class _SiglipLayer(nn.Module):
    """SiglipEncoderLayer: layer_norm1, self_attn (q/k/v/out_proj with bias), layer_norm2,
    mlp (fc1, fc2 with bias)."""

    def __init__(self, D: int, F: int) -> None:
        super().__init__()
        self.layer_norm1 = nn.LayerNorm(D)
        self.q_proj = nn.Linear(D, D)
        self.k_proj = nn.Linear(D, D)
        self.v_proj = nn.Linear(D, D)
        self.out_proj = nn.Linear(D, D)
        self.layer_norm2 = nn.LayerNorm(D)
        self.mlp = _TwoLayerMLP(D, F, bias=True)


class _Gemma3ForConditionalGeneration(nn.Module):
    """Gemma3ForConditionalGeneration: SiglipVisionModel (patch Conv2d, position Embedding,
    encoder layers, post_layernorm; no head), Gemma3MultiModalProjector (mm_soft_emb_norm
    RMSNorm(Dv) and mm_input_projection_weight [Dv, D]) and the Gemma 3 language model."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        v = spec.vision
        assert v is not None
        D = v.d_model
        self.patch_embedding = nn.Conv2d(v.channels, D, v.patch_size, stride=v.patch_size)
        self.position_embedding = nn.Embedding(v.patches, D)
        self.vision_layers = nn.ModuleList(_SiglipLayer(D, v.d_ff) for _ in range(v.n_layers))
        self.post_layernorm = nn.LayerNorm(D)
        self.mm_soft_emb_norm = nn.RMSNorm(D)
        self.mm_input_projection_weight = nn.Parameter(torch.empty(D, spec.d_model))
        self.language_model = _Gemma3ForCausalLM(spec)


def _gemma3(spec: ModelSpec) -> nn.Module:
    return _Gemma3ForConditionalGeneration(spec) if spec.vision else _Gemma3ForCausalLM(spec)


class _JambaMambaMixer(nn.Module):
    """JambaMambaMixer: in_proj, depthwise conv1d (bias), x_proj, dt_proj (bias), A_log, D,
    out_proj, and RMSNorms on dt, B and C."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        D, E, N, R = spec.d_model, spec.ssm_inner, spec.ssm_state_size, spec.ssm_dt_rank
        self.in_proj = nn.Linear(D, 2 * E, bias=False)
        self.conv1d = nn.Conv1d(E, E, spec.ssm_conv_kernel, groups=E, bias=True)
        self.x_proj = nn.Linear(E, R + 2 * N, bias=False)
        self.dt_proj = nn.Linear(R, E, bias=True)
        self.A_log = nn.Parameter(torch.empty(E, N))
        self.D = nn.Parameter(torch.empty(E))
        self.out_proj = nn.Linear(E, D, bias=False)
        self.dt_layernorm = nn.RMSNorm(R)
        self.b_layernorm = nn.RMSNorm(N)
        self.c_layernorm = nn.RMSNorm(N)


class _JambaLayer(nn.Module):
    """JambaAttentionDecoderLayer / JambaMambaDecoderLayer: input_layernorm, the mixer,
    pre_ff_layernorm, and a JambaMLP or JambaSparseMoeBlock (router without bias)."""

    def __init__(self, spec: ModelSpec, i: int) -> None:
        super().__init__()
        self.input_layernorm = _norm(spec, spec.d_model)
        mixer = spec.layer_types[i]
        self.mixer: nn.Module = (
            _JambaMambaMixer(spec) if mixer == "mamba" else _SplitAttention(spec)
        )
        self.pre_ff_layernorm = _norm(spec, spec.d_model)
        moe = (i - spec.expert_layer_offset) % spec.expert_layer_period == 0
        moe = moe and i >= spec.expert_layer_offset
        self.feed_forward = _MixtralSparseMoe(spec) if moe else _SwiGLU(spec.d_model, spec.d_ff)


class _JambaForCausalLM(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(spec.vocab_size, spec.d_model)
        self.layers = nn.ModuleList(_JambaLayer(spec, i) for i in range(spec.n_layers))
        self.final_layernorm = _norm(spec, spec.d_model)
        self.lm_head = _lm_head(spec, self.embed_tokens)


_BUILDERS: dict[str, Callable[[ModelSpec], nn.Module]] = {
    "llama": _LlamaForCausalLM,
    "mistral": _LlamaForCausalLM,
    "mixtral": _LlamaForCausalLM,
    "qwen2": _LlamaForCausalLM,
    "gpt": _GPT2LMHeadModel,
    "opt": _OPTForCausalLM,
    "gpt-neox": _GPTNeoXForCausalLM,
    "phi": _PhiForCausalLM,
    "deepseek-v3": _DeepseekV3ForCausalLM,
    "qwen3": _Qwen3ForCausalLM,
    "qwen3-moe": _Qwen3ForCausalLM,
    "gpt-oss": _GptOssForCausalLM,
    "gemma3": _gemma3,
    "jamba": _JambaForCausalLM,
}
FAMILIES = tuple(_BUILDERS)
