"""Cost curves of one configuration group (GPU, TP, PP, EP, precision, optimizations): what the
serving model and the simulation need, priced in a few vectorised calls of the cost pipeline.

A decode or mixed step at total concurrency M (tokens in flight summed over pipeline
micro-batches) is priced once on a shared grid of M, split into
- `body_s`: every operator but attention and lm_head (weights, norms, TP all-reduce), which
  depends only on the M token rows;
- `lm_s`: lm_head, which only decode tokens need (prefill keeps the last token's logits);
- `attn_s`: decode attention of M sequences at the mean KV length (plus its slope in KV length).
Prefill of one prompt is priced at the prompt-length quantiles. B and L go into
`Pipeline.price_step` as numpy arrays, so each curve is one call (DESIGN.md step 4).

Pipeline parallelism (PP stages, PP micro-batches in flight; Megatron-LM, Narayanan et al. 2021)
prices a step of M tokens as the full layer stack run on one micro-batch of M/PP, plus PP−1
activation sends; a lone prompt's prefill traverses all stages (latency S) but holds each stage
for S/PP only.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from hardware.errors import RooflensError
from model.api import make_pipeline, make_scenario
from model.dtypes import dtype_bytes
from model.memory import (
    MemoryBreakdown,
    activation_bytes,
    kv_bytes_per_token,
    kv_tokens_held,
    weights_bytes_per_gpu,
)
from model.optimizations import Optimization
from model.pipeline import Pipeline, Step
from model.planner.prices import price_per_gpu_hour
from model.planner.workload import ServingWorkload
from model.scenario import Scenario
from model.spec import ModelSpec

# Total tokens per step: every integer to 16, then 3 % steps to 65,536 (the step time is
# piecewise linear in M, so interpolation on this grid is within a fraction of a percent).
TOKEN_GRID = np.unique(np.concatenate([np.arange(1.0, 17.0), np.geomspace(16, 65536, 280)]))
N_POINTS = 32  # quantile points per length distribution


@dataclass(frozen=True)
class Group:
    gpu: str
    tp: int
    pp: int
    ep: int
    weight_dtype: str
    act_dtype: str
    kv_dtype: str
    opts: tuple[str, ...] = ()

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp


@dataclass(frozen=True)
class Curves:
    group: Group
    tokens: np.ndarray  # the M grid, tokens per step
    body_s: np.ndarray
    lm_s: np.ndarray
    attn_s: np.ndarray  # decode attention of M sequences at kv_len_mean
    attn_s_per_kv_token: np.ndarray  # d attention / d (Σ KV length) at each M, for the sim
    kv_len_mean: float
    prompt_points: np.ndarray  # equal-probability prompt lengths
    prefill_s: np.ndarray  # one prompt's prefill latency at each point
    prefill_attn_s: np.ndarray  # its attention part
    prefill_p99_s: float  # at the p99 prompt
    prompt_p99_tokens: float
    prefill_attn_p99_s: float
    prefill_grid_tokens: np.ndarray  # prompt lengths 1..max context, for the simulation
    prefill_grid_s: np.ndarray
    prefill_attn_grid_s: np.ndarray
    weights_bytes: float
    kv_bytes_per_token: float  # per GPU
    kv_tokens_per_sequence: float  # held at the end of a mean request (P + O − 1)
    activation_bytes: float
    fixed_bytes: float  # weights + overhead + activations + optimizations' extra
    capacity_bytes: float
    max_batch_memory: float  # sequences whose KV fits beside the fixed bytes
    kv_transfer_s_per_token: float  # disaggregated: one token's KV shard over the link
    kv_transfer_latency_s: float
    usd_per_gpu_hour: float

    @property
    def decode_s(self) -> np.ndarray:
        return self.body_s + self.lm_s + self.attn_s

    def memory_bytes(self, batch: float) -> float:
        return self.fixed_bytes + batch * self.kv_bytes_per_token * self.kv_tokens_per_sequence


def build_curves(
    spec: ModelSpec,
    group: Group,
    workload: ServingWorkload,
    opts: list[Optimization],
    *,
    profile: str,
    chunk_tokens: int,
    overhead_bytes: float,
) -> Curves:
    """Price one group. Raises RooflensError for a combination the scenario rejects."""
    prompt_mean = max(1, round(workload.prompt.mean(N_POINTS)))
    output_mean = max(1, round(workload.output.mean(N_POINTS)))
    prompt_p99 = workload.prompt.p99()
    sc = make_scenario(
        spec,
        group.gpu,
        prompt_len=prompt_mean,
        output_len=output_mean,
        weight_dtype=group.weight_dtype,
        act_dtype=group.act_dtype,
        kv_dtype=group.kv_dtype,
        tp=group.tp,
        pp=group.pp,
        ep=group.ep,
        profile=profile,
        overhead_bytes=overhead_bytes,
        prefill_chunk_tokens=max(chunk_tokens, math.ceil(prompt_p99)),
    )
    pipe = make_pipeline(sc, opts)
    sc = pipe.scenario
    pp = float(group.pp)
    kv_len = workload.kv_len_mean_tokens()
    M = TOKEN_GRID

    # Decode / mixed step: B = M/PP sequences (one micro-batch), L at the mean and twice it.
    kv_lens = np.array([[kv_len, 2 * kv_len]])
    priced = pipe.price_step(Step("decode", (M / pp)[:, None], 1.0, kv_lens))
    body, lm, attn = np.zeros(M.size), np.zeros(M.size), np.zeros((M.size, 2))
    for p in priced:
        t = np.broadcast_to(np.asarray(p.total_s, dtype=np.float64), (M.size, 2))
        if p.op.name == "attn.core":
            attn = attn + t
        elif p.op.name == "lm_head":
            lm = lm + t[:, 0]
        else:
            body = body + t[:, 0]
    hop_link = sc.system.link_for(group.tp * group.pp)
    act_b = dtype_bytes(sc.precision.act_dtype)

    def pp_send_s(tokens: np.ndarray) -> np.ndarray:
        """PP−1 point-to-point sends of the [tokens, D] activations between stages."""
        per_hop = tokens * sc.model.d_model * act_b / hop_link.bytes_per_s + hop_link.latency_s
        return (pp - 1.0) * per_hop

    body = body + pp_send_s(M / pp)
    # Σ L over the batch grows by M/PP positions when L grows by one: slope per KV token (at
    # each M: attention's achieved bandwidth may depend on the batch).
    slope = (attn[:, 1] - attn[:, 0]) / (kv_len * M / pp)

    points = workload.prompt.points(N_POINTS)
    grid_top = max(sc.model.max_context, prompt_p99)
    lengths = np.unique(np.concatenate([points, [prompt_p99], np.geomspace(1, grid_top, 40)]))
    pre = pipe.price_step(Step("prefill", 1.0, lengths, lengths))
    pre_total = np.zeros(lengths.size)
    pre_attn = np.zeros(lengths.size)
    for p in pre:
        t = np.broadcast_to(np.asarray(p.total_s, dtype=np.float64), lengths.shape)
        pre_total = pre_total + t
        if p.op.name == "attn.core":
            pre_attn = pre_attn + t
    pre_total = pre_total + pp_send_s(lengths)

    mem = _memory(sc, pipe, chunk_tokens=max(chunk_tokens, math.ceil(prompt_p99)))
    per_sequence = mem.kv_bytes_per_token * float(np.mean(kv_tokens_held(sc, pipe)))
    fixed = mem.weights_bytes + mem.overhead_bytes + mem.activation_bytes + mem.extra_bytes
    room = sc.gpu.memory_bytes - fixed
    kv_link = sc.system.inter_node or sc.system.intra_node
    usd, _ = price_per_gpu_hour(group.gpu, workload.prices_usd_per_gpu_hour)
    return Curves(
        group=group,
        tokens=M,
        body_s=body,
        lm_s=lm,
        attn_s=attn[:, 0],
        attn_s_per_kv_token=slope,
        kv_len_mean=kv_len,
        prompt_points=points,
        prefill_s=np.interp(points, lengths, pre_total),
        prefill_attn_s=np.interp(points, lengths, pre_attn),
        prefill_p99_s=float(np.interp(prompt_p99, lengths, pre_total)),
        prompt_p99_tokens=prompt_p99,
        prefill_attn_p99_s=float(np.interp(prompt_p99, lengths, pre_attn)),
        prefill_grid_tokens=lengths,
        prefill_grid_s=pre_total,
        prefill_attn_grid_s=pre_attn,
        weights_bytes=mem.weights_bytes,
        kv_bytes_per_token=mem.kv_bytes_per_token,
        kv_tokens_per_sequence=per_sequence / max(mem.kv_bytes_per_token, 1e-30),
        activation_bytes=mem.activation_bytes,
        fixed_bytes=fixed,
        capacity_bytes=sc.gpu.memory_bytes,
        max_batch_memory=max(0.0, math.floor(room / per_sequence)) if per_sequence else 0.0,
        kv_transfer_s_per_token=mem.kv_bytes_per_token / kv_link.bytes_per_s,
        kv_transfer_latency_s=kv_link.latency_s,
        usd_per_gpu_hour=usd,
    )


def _memory(sc: Scenario, pipe: Pipeline, chunk_tokens: int) -> MemoryBreakdown:
    """memory_breakdown's terms for a prefill chunk of `chunk_tokens` (the largest a step
    holds), with the optimizations' memory hooks, without its max-batch search."""
    prompt = float(sc.workload.prompt_len)
    act = float(activation_bytes(sc, pipe, chunk_tokens / prompt))
    mem = MemoryBreakdown(
        weights_bytes=weights_bytes_per_gpu(sc),
        kv_cache_bytes=0.0,
        kv_bytes_per_token=kv_bytes_per_token(sc),
        activation_bytes=act,
        overhead_bytes=sc.overhead_bytes,
        capacity_bytes=sc.gpu.memory_bytes,
        max_batch=0,
    )
    for opt in pipe.opts:
        mem = opt.memory(mem, sc)
    return MemoryBreakdown(**asdict(mem))


def group_error(exc: Exception) -> str:
    """Why a group was skipped, one line (scenario validation failures)."""
    return str(exc) if isinstance(exc, RooflensError) else type(exc).__name__
