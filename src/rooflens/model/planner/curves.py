"""Cost curves of one configuration group (GPU, TP, PP, EP, precision, optimizations, serving
engine): what the serving model and the simulation need, priced in a few vectorised calls of the
cost pipeline.

A decode or mixed step at total concurrency M (tokens in flight summed over pipeline
micro-batches) is priced once on a shared grid of M:
- `decode_s`: time per output token of a step of M sequences at the mean KV length, after the
  optimizations' step-structure hooks (`Optimization.timing`: a draft-and-verify iteration
  emits τ tokens, weights streamed over PCIe, …), and its slope in Σ KV length for the sim;
- `body_s`: every operator of a plain step but attention and lm_head (weights, norms, TP
  all-reduce), which depends only on the token rows: the marginal cost of prompt-chunk rows
  riding along a decode step (chunked prefill).
Prefill of one prompt is priced at the prompt-length quantiles (the optimizations' `prompt_tokens`
hook maps a request's prompt to what the target prefills; their `timing` hook adds side-model
prefills such as a draft's or a prompt compressor's). B and L go into `Pipeline.price_step` as
numpy arrays, so each curve is one call (DESIGN.md step 4).

Pipeline parallelism (model/predict/pp_schedule.py, as `rooflens predict`): the M sequences run as
m = min(PP, M) micro-batches of M/m, and a token's time is the GPipe decode cycle of one
micro-batch's step, whose pp.send_recv rows are the stage sends (priced once, in
model/ops/table.py);
a lone prompt's prefill traverses all stages (latency S) but holds the first stage for one slot
(`stage_hold_s`, from the prefill's send `prefill_hop_s`). Expert parallelism (ep a multiple
of tp; DeepSeek-V3 §3.4, vLLM/SGLang DP attention): a replica is max(tp, ep)·pp GPUs holding
E/ep experts each, running ep/tp attention groups of TP GPUs side by side; the curves are one
attention group's (the cost pipeline prices the all-to-all dispatch/combine and the experts read
by all groups' tokens).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.profiles import DEFAULT_ENGINE
from rooflens.model.ops.op import Num
from rooflens.model.optimizations.base import Optimization
from rooflens.model.planner.gpu_prices import price_per_gpu_hour
from rooflens.model.planner.kv_tiers import prefix_plan
from rooflens.model.planner.workload import ServingWorkload
from rooflens.model.predict.api import make_pipeline, make_scenario
from rooflens.model.predict.memory import (
    activation_bytes,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    weights_bytes_per_gpu,
)
from rooflens.model.predict.pp_schedule import microbatch_count, send_s, step_cycle_s
from rooflens.model.predict.predictor import Pipeline
from rooflens.model.predict.scenario import Scenario
from rooflens.model.predict.steps import MemoryBreakdown, Step, StepTiming
from rooflens.model.pricing.roofline import PricedOp, step_time_s
from rooflens.model.specs.spec import ModelSpec

# Total tokens per step: every integer to 16, then 3 % steps to 65,536 (the step time is
# piecewise linear in M, so interpolation on this grid is within a fraction of a percent).
TOKEN_GRID = np.unique(np.concatenate([np.arange(1.0, 17.0), np.geomspace(16, 65536, 280)]))
N_POINTS = 32  # quantile points per length distribution
NOT_BODY = ("attn.core", "lm_head")


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
    engine: str = DEFAULT_ENGINE  # whose kernels price `calibrated` (hardware/profiles.py)

    @property
    def attention_groups(self) -> int:
        """TP groups running attention side by side in one replica: ep/tp with EP, else 1."""
        return max(1, self.ep // self.tp)

    @property
    def gpus_per_replica(self) -> int:
        return max(self.tp, self.ep) * self.pp


@dataclass(frozen=True)
class Curves:
    group: Group
    tokens: np.ndarray  # the M grid, tokens per step
    body_s: np.ndarray  # plain step without attention and lm_head: prompt-row marginal cost
    decode_s: np.ndarray  # time per output token, M sequences at kv_len_mean
    decode_s_per_kv_token: np.ndarray  # d decode_s / d (Σ KV length of the M sequences)
    tokens_per_step: float  # tokens a sequence gains per decode step (τ; 1 plain)
    rows_per_sequence: float  # rows per sequence the target's step is fed (verify width)
    kv_len_mean: float
    prompt_points: np.ndarray  # equal-probability prompt lengths the target prefills
    prefill_s: np.ndarray  # one prompt's time to first token at each point
    prefill_hop_s: np.ndarray  # one stage-to-stage send of that prefill (0 without PP)
    prefill_extra_s: np.ndarray  # its part outside the body rows: attention, side models
    prefill_p99_s: float  # at the p99 prompt
    prompt_p99_tokens: float  # the p99 prompt as the target prefills it
    prefill_extra_p99_s: float
    prefill_grid_tokens: np.ndarray  # request prompt lengths 1..max context, for the sim
    prefill_grid_target_tokens: np.ndarray  # the same as the target prefills them
    prefill_grid_s: np.ndarray
    prefill_extra_grid_s: np.ndarray
    prefill_hop_grid_s: np.ndarray  # one stage-to-stage send of that prefill (0 without PP)
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
    step_overhead_s: float = 0.0  # host time per iteration, in decode_s and prefill (profile.py)
    prompt_row_fraction: float = 1.0  # prompt rows computed per prompt token (1 − prefix hit)
    scheme: str = ""  # the precision scheme priced (model/specs/quant.py; FP8-block or not)

    def memory_bytes(self, batch: float) -> float:
        return self.fixed_bytes + batch * self.kv_bytes_per_token * self.kv_tokens_per_sequence


def _total(
    priced: list[PricedOp], shape: tuple[int, ...], names: tuple[str, ...] = ()
) -> np.ndarray:
    """Σ total_s of the priced ops (only those named, if names are given), broadcast."""
    out = np.zeros(shape)
    for p in priced:
        if not names or p.op.name in names:
            out = out + np.broadcast_to(np.asarray(p.total_s, dtype=np.float64), shape)
    return out


def build_curves(
    spec: ModelSpec,
    group: Group,
    workload: ServingWorkload,
    opts: list[Optimization],
    *,
    profile: str,
    chunk_tokens: int,
    overhead_bytes: float,
    kv_offload: str = "none",
) -> Curves:
    """Price one group. Raises RooflensError for a combination the scenario rejects. A prefix
    cache (workload.prefix_hit_rate) prefills (1 − h) of each prompt over the whole prompt,
    plus bringing the cached part back from its tier (kv_tiers.py)."""
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
        engine=group.engine,
        overhead_gb=overhead_bytes / 1e9,
        prefill_chunk=max(chunk_tokens, math.ceil(prompt_p99)),
    )
    pipe = make_pipeline(sc, opts)
    sc = pipe.scenario

    def target(tokens: Num) -> Num:
        """Prompt tokens the target prefills (prompt compression), on arrays."""
        for opt in pipe.opts:
            tokens = opt.prompt_tokens(tokens)
        return tokens

    pp = group.pp
    points_in = workload.prompt.points(N_POINTS)
    points = np.asarray(target(points_in), dtype=np.float64)
    kv_len = float(np.mean(points)) + workload.kv_len_mean_tokens() - workload.prompt.mean()
    M = TOKEN_GRID
    grid_top = max(sc.model.max_context, prompt_p99)
    lengths = np.unique(np.concatenate([points_in, [prompt_p99], np.geomspace(1, grid_top, 40)]))
    lengths_target = np.asarray(target(lengths), dtype=np.float64)
    mem = _memory(sc, pipe, chunk_tokens=max(chunk_tokens, math.ceil(prompt_p99)))
    prefix = prefix_plan(
        group.gpu,
        sc.gpu,
        mem.kv_bytes_per_token,
        workload.prefix_hit_rate,
        workload.prefix_pool_tokens,
        float(np.mean(points)),
        kv_offload,
    )
    rows = np.maximum(lengths_target * (1.0 - prefix.hit), 1.0)  # prompt rows computed

    # Plain steps: decode at B = M/m sequences (one micro-batch), L at the mean and twice it;
    # prefill of one prompt at each length. Then the optimizations' step-structure hooks.
    m = np.asarray(microbatch_count(M, pp))[:, None]
    B, kv_lens = M[:, None] / m, np.array([[kv_len, 2 * kv_len]])
    decode = pipe.price_step(Step("decode", B, 1.0, kv_lens))
    prefill = pipe.price_step(Step("prefill", 1.0, rows, lengths_target))
    plain_prefill_s = _total(prefill, lengths.shape)
    t = StepTiming(batch=B, kv_lens=kv_lens, prefill_batch=1.0, prompt_tokens=lengths_target,
                   prompt_tokens_in=lengths, prefill_priced=prefill, prefill_s=plain_prefill_s,
                   decode_priced=decode, decode_step_s=step_time_s(decode))  # fmt: skip
    for opt in pipe.opts:
        t = opt.timing(t, sc, pipe)

    # one micro-batch's pass without attention and lm_head, its sends included (once)
    body = _total(decode, (M.size, 2))[:, 0] - _total(decode, (M.size, 2), NOT_BODY)[:, 0]
    tau, width = float(t.tokens_per_step), float(t.rows_per_sequence)
    cycle = step_cycle_s(t.decode_step_s, t.decode_priced, pp, m)
    per_token = np.broadcast_to(cycle / tau, (M.size, 2))
    # Non-decreasing in M (running maximum): the cost model's Flash-Decoding split heuristic
    # makes a few batches cheaper than smaller ones (on an H100, 17 sequences of 8 KV heads
    # fill the SMs unsplit while 16 split and pay a combine kernel), which would let latency
    # fall as load rises; the planner takes the envelope (conservative, < 1 % at those M). One
    # sequence a micro-batch keeps its own price: its m = 1 path is no floor (single_row.py).
    envelope = np.maximum.accumulate(np.where(B[:, :1] > 1, per_token, 0.0), axis=0)
    per_token = np.where(B[:, :1] > 1, envelope, per_token)
    # Σ L over the M sequences grows by M positions when L grows by one: slope per KV token
    # (at each M: attention's achieved bandwidth may depend on the batch).
    slope = (per_token[:, 1] - per_token[:, 0]) / (kv_len * M)

    load = prefix.load_s_per_token * prefix.hit * lengths_target  # cached KV back to HBM
    pre_total = np.broadcast_to(t.prefill_s, lengths.shape) + load
    pre_extra = _total(prefill, lengths.shape, ("attn.core",)) + pre_total - plain_prefill_s
    hop = np.broadcast_to(np.asarray(send_s(prefill, pp), dtype=np.float64), lengths.shape).copy()

    # per layer kind (memory.py); a shared prefix counts once, in `fixed`
    per_sequence = (
        kv_bytes_per_sequence(sc, pipe.opts) - mem.kv_bytes_per_token * prefix.shared_tokens
    )
    fixed = mem.weights_bytes + mem.overhead_bytes + mem.activation_bytes + mem.extra_bytes
    fixed += prefix.hbm_pool_tokens * mem.kv_bytes_per_token
    room = sc.gpu.memory_bytes - fixed
    kv_link = sc.system.inter_node or sc.system.intra_node
    usd, _ = price_per_gpu_hour(group.gpu, workload.prices_usd_per_gpu_hour)
    return Curves(
        group=group,
        tokens=M,
        body_s=body,
        decode_s=per_token[:, 0].copy(),
        decode_s_per_kv_token=slope,
        tokens_per_step=tau,
        rows_per_sequence=width,
        kv_len_mean=kv_len,
        prompt_points=points,
        prefill_s=np.interp(points_in, lengths, pre_total),
        prefill_extra_s=np.interp(points_in, lengths, pre_extra),
        prefill_hop_s=np.interp(points_in, lengths, hop),
        prefill_p99_s=float(np.interp(prompt_p99, lengths, pre_total)),
        prompt_p99_tokens=float(target(prompt_p99)),
        prefill_extra_p99_s=float(np.interp(prompt_p99, lengths, pre_extra)),
        prefill_grid_tokens=lengths,
        prefill_grid_target_tokens=lengths_target,
        prefill_grid_s=pre_total,
        prefill_extra_grid_s=pre_extra,
        prefill_hop_grid_s=hop,
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
        prompt_row_fraction=1.0 - prefix.hit,
        scheme=sc.precision.scheme,
    )


def _memory(sc: Scenario, pipe: Pipeline, chunk_tokens: int) -> MemoryBreakdown:
    """memory_breakdown's terms for a prefill chunk of `chunk_tokens` (the largest a step
    holds), with the optimizations' memory hooks, without its max-batch search."""
    prompt = float(sc.workload.prompt_len)
    act = float(activation_bytes(sc, pipe.opts, chunk_tokens / prompt))
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
