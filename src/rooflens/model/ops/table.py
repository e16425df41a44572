"""The operator table (DESIGN.md step 1): one row per operator of a forward step, with FLOPs and
bytes split by tensor kind, for the default serving stack (KV cache, fused/Flash attention, paged
KV, fused add+RMSNorm). Optimizations (model/optimizations/) transform this table from outside.
This module owns the step's assembly (the blocks in order, the parallel-layout check); the
blocks are attention_block.py and ffn_block.py, the row emitter rows.py, the rows' formulas
attention.py, mla.py, moe.py, ssm.py, vision.py and op.py (import each name from there).

A step feeds T new tokens per sequence for B sequences whose attention spans L positions (the new
ones included): prefill is T = L = P; decode step i is T = 1, L = P + i; chunked prefill and
speculative verification are other (T, L). B, T and L may be numpy arrays: every formula is
plain arithmetic, so one call prices a whole grid of configurations (DESIGN.md step 4).

Counts per operator instance; `count` is how many times the instance repeats per step (layers).
FLOPs count 2 per multiply-add (DESIGN.md). Bytes are minimum HBM traffic: each operand read
once, each result written once.
"""

from __future__ import annotations

from rooflens.hardware.errors import RooflensError
from rooflens.model.ops.attention_block import attention, mamba
from rooflens.model.ops.ffn_block import mlp, moe
from rooflens.model.ops.op import Num, Op, embedding_op
from rooflens.model.ops.rows import StepRows
from rooflens.model.ops.vision import vision_ops
from rooflens.model.predict.scenario import Scenario
from rooflens.model.specs.params import norms_per_block


def _check_parallel(b: StepRows) -> None:
    """Expert parallelism spreads whole experts over ep GPUs: ep/tp data-parallel replicas
    of the tensor-parallel attention group (DeepSeek-V3 §3.4; vLLM/SGLang DP attention)."""
    m, ep, tp = b.m, b.ep, b.tp
    if ep == 1:
        return
    if not m.is_moe:
        raise RooflensError(f"--ep {ep} needs a mixture-of-experts model; {m.id} is dense")
    if m.n_experts % ep:
        raise RooflensError(f"--ep {ep} must divide {m.id}'s {m.n_experts} experts")
    if ep % tp:
        raise RooflensError(
            f"--ep {ep} must be a multiple of --tp {tp}: each EP GPU holds whole experts and "
            "attention runs on ep/tp replicas of the TP group"
        )


def _assemble(b: StepRows) -> list[Op]:
    """The blocks of a step in execution order: encoder, embedding, layers, final norm, lm_head."""
    m, n, D = b.m, b.tokens, b.m.d_model
    _check_parallel(b)
    images = b.sc.workload.images_per_prompt
    if b.phase == "prefill" and images and m.vision:  # the encoder, before the LM
        b.ops += vision_ops(b.sc, b.B * images)
    b.ops.append(embedding_op("embed", b.phase, 1, n, D, b.sc.precision.act_dtype))
    b.norm("norm.attn", m.n_layers)
    attention(b)
    mamba(b)
    b.tp_all_reduce(m.n_layers)
    if norms_per_block(m) == 4:  # Gemma 3: a norm on each sublayer's output, before the add
        b.norm("norm.post_attn", m.n_layers, fused_residual=False)
    if not m.parallel_block:
        b.norm("norm.mlp", m.n_layers)
    elif norms_per_block(m) == 2:  # GPT-NeoX's parallel residual: ln2 on the same input
        b.norm("norm.mlp", m.n_layers, fused_residual=False)
    mlp(b, "mlp", m.n_dense_layers, m.d_ff / b.tp)
    moe(b)
    gather = m.n_moe_layers if b.ep > 1 and not m.n_shared_experts else 0
    b.tp_all_reduce(m.n_layers - gather)
    b.tp_all_reduce(gather, "all_gather")
    if norms_per_block(m) == 4:
        b.norm("norm.post_mlp", m.n_layers, fused_residual=False)
    if b.pp > 1:  # activations to the next stage (Megatron-LM PP; Narayanan et al. 2021)
        span = max(b.tp, b.ep) * b.pp
        payload = b.tokens * D * b.ab
        b.comm("pp.send_recv", "send_recv", b.pp - 1, payload, n_gpus=2, span_gpus=span)
    b.norm("norm.final", 1, fused_residual=False)
    b.gemm("lm_head", 1, b.B * b.lm_tokens, m.vocab_size / b.tp, D, plain=True)
    return b.ops


def build_ops(sc: Scenario, phase: str, B: Num, T: Num, L: Num, lm_tokens: Num = 1.0) -> list[Op]:
    """Operators of one step: B sequences, T new tokens each, attention over L positions.

    `lm_tokens` is how many positions per sequence get logits: 1 in prefill (last token only,
    DESIGN.md), T in decode or verification.
    """
    return _assemble(StepRows(sc, phase, B, T, L, lm_tokens))


def decode_ops(sc: Scenario, kv_len: Num) -> list[Op]:
    """One decode step whose attention spans `kv_len` positions (the new token included)."""
    return build_ops(sc, "decode", float(sc.workload.batch), 1.0, kv_len, lm_tokens=1.0)
