"""Memory per GPU: weights, KV cache, peak live activations and runtime overhead; KV bytes per
token; whether it fits; the largest batch that fits.

- Weights: linear layers at the weight dtype (plus one fp16 scale per group when quantized, as
  GPTQ/AWQ store them); embeddings, lm_head, norms and MoE routers stay 16-bit, as quantizers
  leave them.
  Split by TP (Megatron), except the tensors TP replicates (tp_replicated_params), and by PP
  stage (the worst stage holds the larger of embedding and lm_head; with PP = 1 it holds both).
  A vision encoder (model/specs/vision.py) stays 16-bit and is replicated on every GPU.
- KV cache: B × Σ over layer kinds of layers × tokens held × bytes per token per layer, bytes
  per token = layers (per stage) × 2 · K_gpu · Dh · kv bytes (MLA: the latent, replicated).
  Tokens held = P + O − 1, capped by a layer's sliding window (per layer where layer kinds
  mix, as in gpt-oss and Gemma 3); optimizations adjust it (paging, reservation, sinks).
- Activations: the maximum over operators of their live tensors plus the residual stream, for
  one prefill chunk (DESIGN.md: the live peak, not a sum over operators).
- Overhead: CUDA context, library workspaces and graph pools (Scenario.overhead_bytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from rooflens.model.ops.op import Num, weight_storage_bytes
from rooflens.model.optimizations.base import Optimization
from rooflens.model.predict.operators import step_ops
from rooflens.model.predict.scenario import Scenario
from rooflens.model.predict.steps import MemoryBreakdown, Step
from rooflens.model.specs.dtypes import NARROW_WEIGHT_DTYPES, dtype_bytes
from rooflens.model.specs.params import count_params, linear_tensors, mla_kv_b_params, router_params
from rooflens.model.specs.spec import ModelSpec

MAX_BATCH_SEARCH = 1 << 20


def tp_replicated_params(spec: ModelSpec, tp: int) -> float:
    """Linear-layer parameters each GPU holds beyond a 1/tp share, because TP copies them
    (vLLM's QKVParallelLinear and ReplicatedLinear; the operator table reads them whole):
    - K/V projections (and biases) once tp exceeds the KV heads: max(1, K/tp) heads per GPU;
    - MLA's q_a_proj and kv_a_proj_with_mqa with their latent RMSNorms (vLLM deepseek_v2.py);
    - MoE routers (vLLM mixtral.py and deepseek_v2.py gate: ReplicatedLinear)."""
    m = spec
    if m.attention == "mla":
        q_a = m.d_model * m.q_lora_rank + m.q_lora_rank if m.q_lora_rank else 0
        kv_a = m.d_model * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
        extra = m.n_layers * (q_a + kv_a) * (1.0 - 1.0 / tp)
    else:
        bias = 1 if m.linear_bias or m.qkv_bias else 0
        per_kv_head = 2 * m.head_dim * (m.d_model + bias)  # K and V rows of the QKV weight
        extra = (
            m.n_attention_layers * per_kv_head * (max(1, m.n_kv_heads // tp) - m.n_kv_heads / tp)
        )
    if m.is_moe:
        extra += m.n_moe_layers * router_params(m) * (1.0 - 1.0 / tp)
    return extra


def linear_params_per_gpu(sc: Scenario) -> float:
    """Linear-layer parameters one GPU holds over all layers (divide by pp for one stage)."""
    pc = count_params(sc.model)
    tp = sc.parallel.tp
    linear = pc.layers - pc.n_layers * pc.norms_per_layer
    experts = pc.n_moe_layers * pc.n_experts * pc.expert_per_expert
    return (
        (linear - experts) / tp
        + routed_expert_params_per_gpu(sc)
        + tp_replicated_params(sc.model, tp)
    )


def routed_expert_params_per_gpu(sc: Scenario) -> float:
    """Routed-expert parameters one GPU holds over all layers: TP slices them /tp; EP (ep a
    multiple of tp) spreads whole experts /ep."""
    pc = count_params(sc.model)
    experts = pc.n_moe_layers * pc.n_experts * pc.expert_per_expert
    return experts / max(sc.parallel.tp, sc.parallel.ep)


def weights_bytes_per_gpu(sc: Scenario) -> float:
    pc = count_params(sc.model)
    tp, pp = sc.parallel.tp, sc.parallel.pp
    p = sc.precision
    norms = pc.n_layers * pc.norms_per_layer + pc.final_norm
    plain = 4.0 if p.weight_dtype == "fp32" else 2.0
    per_gpu = linear_params_per_gpu(sc)
    tensors = linear_tensors(sc.model)
    # routed experts at their own dtype where it differs (gpt-oss: mxfp4 experts, bf16 rest)
    experts = routed_expert_params_per_gpu(sc) if p.expert_dtype != p.weight_dtype else 0.0
    # MoE routers stay 16-bit and whole on every GPU, as the operator table reads them
    # (model/ops/ffn_block.py: engines build the gate unquantized)
    routers = float(pc.n_moe_layers * router_params(sc.model))
    group = p.weight_group_size
    layer_bytes = (
        weight_storage_bytes(per_gpu - experts - routers, p.weight_dtype, group, tensors)
        + weight_storage_bytes(experts, p.expert_dtype, group, 0.0)
        + routers * plain
    ) / pp
    ends = (
        pc.embedding + pc.positional + pc.lm_head
        if pp == 1
        else max(pc.embedding + pc.positional, pc.lm_head)
    )
    vision = pc.vision  # the vision encoder stays 16-bit and whole on every GPU
    return float(layer_bytes + (ends / tp + norms / pp + vision) * plain
                 + absorbed_copy_params_per_gpu(sc) * plain)  # fmt: skip


def absorbed_copy_params_per_gpu(sc: Scenario) -> float:
    """The 16-bit copy of MLA's W_UK and W_UV an engine keeps beside a quantized kv_b_proj:
    no quantized bmm exists for decode's absorbed projections, so vLLM's MLA backend
    dequantizes kv_b_proj at load and keeps both (prefill runs kv_b_proj itself). With 16-bit
    weights they are views of kv_b_proj: nothing extra."""
    p, m = sc.precision, sc.model
    if p.weight_dtype not in NARROW_WEIGHT_DTYPES:
        return 0.0
    return m.n_layers * mla_kv_b_params(m) / sc.parallel.tp / sc.parallel.pp


def kv_bytes_per_token(sc: Scenario) -> float:
    m = sc.model
    per_layer = (
        m.kv_cache_elements_per_token_per_layer
        if m.attention == "mla"
        else 2 * sc.kv_heads_per_gpu * m.head_dim
    )
    return m.n_attention_layers / sc.parallel.pp * per_layer * dtype_bytes(sc.precision.kv_dtype)


def ssm_state_bytes_per_sequence(sc: Scenario) -> float:
    """A hybrid's Mamba layers hold a constant-size state per sequence instead of a KV cache:
    the SSM state E × N and the conv1d's last k − 1 inputs E × (k − 1) per layer (vLLM
    MambaMixer's ssm_state and conv_state), E split by TP, at the KV dtype (Jamba report §2:
    the state does not grow with the context)."""
    m = sc.model
    if not m.n_mamba_layers:
        return 0.0
    per_layer = m.ssm_inner / sc.parallel.tp * (m.ssm_state_size + m.ssm_conv_kernel - 1)
    layers = m.n_mamba_layers / sc.parallel.pp
    return layers * per_layer * dtype_bytes(sc.precision.kv_dtype)


def kv_tokens_held(sc: Scenario, opts: Sequence[Optimization]) -> Num:
    """Positions a sequence holds in each layer of this scenario's (uniform) window."""
    tokens: Num = float(sc.context_tokens)
    if sc.model.sliding_window:
        tokens = min(tokens, float(sc.model.sliding_window))
    for opt in opts:
        tokens = opt.kv_tokens_per_sequence(tokens, sc)
    return tokens


def kv_bytes_per_sequence(sc: Scenario, opts: Sequence[Optimization]) -> float:
    """KV bytes one sequence holds: per layer kind (model.window_layers), that kind's layers ×
    the positions it holds (a sliding layer at most its window, a full one the whole context)
    × bytes per token per layer, plus a hybrid's constant Mamba state. Each kind is priced as
    a uniform model of its window, so every optimization's KV hook sees the window it acts on
    (Gemma 3 report §2; gpt-oss)."""
    m = sc.model
    per_layer_token = kv_bytes_per_token(sc) / m.n_attention_layers
    total = ssm_state_bytes_per_sequence(sc)
    for window, layers in m.window_layers.items():
        kind = sc if not m.layer_types else sc.model_copy(update={"model": m.with_window(window)})
        total += per_layer_token * layers * float(np.mean(kv_tokens_held(kind, opts)))
    return total


def activation_bytes(sc: Scenario, opts: Sequence[Optimization], batch: Num) -> Num:
    """Live peak while prefilling one chunk of min(B·P, chunk) tokens."""
    P = float(sc.workload.prompt_len)
    chunk = float(sc.workload.prefill_chunk_tokens) or np.inf
    tokens = np.minimum(np.asarray(batch, dtype=np.float64) * P, chunk)
    T = np.minimum(P, tokens)
    ops = step_ops(sc, opts, Step("prefill", tokens / T, T, T))
    live: Num = 0.0
    for op in ops:
        live = np.maximum(live, op.live_bytes)
    residual = 2.0 * tokens * sc.model.d_model * dtype_bytes(sc.precision.act_dtype)
    return live + residual


def memory_breakdown(sc: Scenario, opts: Sequence[Optimization]) -> MemoryBreakdown:
    """Memory per GPU of `sc` under `opts` (their KV and memory hooks applied, in order)."""
    per_token = kv_bytes_per_token(sc)
    per_sequence = kv_bytes_per_sequence(sc, opts)
    weights = weights_bytes_per_gpu(sc)
    capacity = sc.gpu.memory_bytes
    mem = MemoryBreakdown(
        weights_bytes=weights,
        kv_cache_bytes=sc.workload.batch * per_sequence,
        kv_bytes_per_token=per_token,
        activation_bytes=float(activation_bytes(sc, opts, float(sc.workload.batch))),
        overhead_bytes=sc.overhead_bytes,
        capacity_bytes=capacity,
        max_batch=0,
    )
    for opt in opts:
        mem = opt.memory(mem, sc)
    # what the hooks left per GPU (offloaded, sparse or extra weights), whatever the batch
    fixed = mem.weights_bytes + mem.overhead_bytes + mem.extra_bytes

    def total(batch: Num) -> Num:
        return fixed + batch * per_sequence + activation_bytes(sc, opts, batch)

    ceiling = MAX_BATCH_SEARCH
    if per_sequence > 0:  # past this the KV cache alone overflows (activations only add)
        ceiling = max(2, min(ceiling, int((capacity - fixed) // per_sequence) + 1))
    return MemoryBreakdown(**{**asdict(mem), "max_batch": _max_batch(total, capacity, ceiling)})


def _max_batch(
    total: Any, capacity: float, ceiling: int = MAX_BATCH_SEARCH, points: int = 64
) -> int:
    """Largest B ≤ `ceiling` with total(B) ≤ capacity, total non-decreasing in B and
    broadcast-safe.

    Each round prices `points` batches in one vectorised call and keeps the bracket where the
    total crosses the capacity: a million candidates resolve in four calls, and a ceiling near
    the answer (the batch whose KV cache alone overflows) in one or two.
    """
    lo, hi = 0, ceiling  # no sequence always fits
    while hi - lo > 1:
        grid = np.unique(np.linspace(lo + 1, hi, points).round())  # ends at hi
        fits = np.asarray(total(grid)) <= capacity
        if fits[-1]:  # the ceiling itself fits (later rounds' hi never does)
            return hi
        lo = int(grid[fits].max()) if fits.any() else lo
        hi = int(grid[~fits].min())
    return lo
