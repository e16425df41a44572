"""What `rooflens calibrate fit` fits for each operator kind: the measured ops a kind's rows
are, the `KindEfficiency` terms it fits (hardware/profiles.py) and where the search starts,
the prior that settles an eager kernel's SM-side roof against its HBM fraction (a device copy's,
hardware/profiles.py COPY_FRACTION),
which kinds are fitted on a subset (the attention frontier, tuned MoE configs), and the map
between valid terms and the unconstrained vector Nelder-Mead searches (logistic for fractions,
exp for positive terms). The fit itself is validate/calibrate.py.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from rooflens.hardware.profiles import ENGINES, INPUT_PASS_MAX_BYTES, KindEfficiency
from rooflens.hardware.spec import GPUSpec
from rooflens.model.pricing.eager_roofs import eager_roof
from rooflens.model.pricing.kernel_columns import distinct_text, map_distinct
from rooflens.model.specs.quant import FAMILIES, PLAIN_FAMILIES, attention_family

KIND_OPS: dict[str, tuple[str, ...]] = {
    "gemm": ("gemm",),
    "attention": ("attention_prefill",),
    "attention_decode": ("attention_decode", "attention_prefill"),
    "norm": ("norm",),
    "elementwise": ("elementwise",),
    "embedding": ("embedding",),
    "moe": ("moe",),
}
# The launch floor is fitted in SM clock cycles (model/pricing/roofline.py per_launch_s): the
# same kernels' floors in seconds differ 2x between GPUs, in cycles within 10 % but the B300's.
FULL_TERMS = ("compute_fraction", "memory_fraction", "overhead_cycles", "overlap_power",
              "wave_latency_s", "saturation_blocks_per_sm")  # fmt: skip
# Decode attention's wave latency is fitted in SM cycles too: a one-token program's chain is
# CUDA-core work (the dot products' warp reductions, the online softmax, the split combine), a
# prefill program's the tensor-core tiles' asynchronous loads. Leave-one-GPU-out over the four
# GPUs with engine attention tables (16-bit cache, median / p90 |error|): seconds 15.0 / 46.2 %,
# cycles 13.7 / 46.0 % (A100 17.9 -> 14.4 %, RTX PRO 6000 18.2 -> 16.6 %); fp8 cache 16.0 / 50.9
# -> 16.6 / 50.8 %; prefill in cycles was worse, 14.0 / 37.1 -> 15.3 / 38.2 %. Decode and GEMMs
# also fit the rate of a benchmark's operands kept in L2 (L2_TERM, model/pricing/l2_resident.py).
L2_TERM = "l2_bytes_per_sm_cycle"
DECODE_TERMS = (*("wave_latency_cycles" if t == "wave_latency_s" else t for t in FULL_TERMS),
                L2_TERM)  # fmt: skip
# Memory kinds measured as eager PyTorch kernels also fit their SM-side roof
# (model/pricing/roofline.py; no effect on fused calls): the embedding gather its bytes per SM
# cycle (issue-bound on index arithmetic), streaming norms and elementwise kernels their bytes
# per resident thread per µs (the loads they keep in flight: Vidur's A100/A40 ratio, 1.7x).
MEMORY_TERMS = ("memory_fraction", "overhead_cycles", "bytes_per_sm_cycle")
STREAM_TERMS = ("memory_fraction", "overhead_cycles", "bytes_per_thread_us")
EAGER_ROOF_TERMS = ("bytes_per_sm_cycle", "bytes_per_thread_us")
# One GPU's eager rows cannot tell an HBM fraction from an SM-side roof: a constant bandwidth is
# explained by either. The fit then takes the HBM roof to be a device copy's (hardware/profiles.py
# COPY_FRACTION) and lets the SM-side roof explain the rest, unless a free HBM fraction fits the
# rows better by more than COPY_PRIOR_TOLERANCE (mean |log error|; the fits reach 0.03-0.10). The
# same eager kernels run at 0.35-0.5 of HBM on the A100: they are not HBM-bound there. (With the
# launch floor in cycles, the pooled eager elementwise rows of the A100 and A40 fit a free fraction
# of 0.79 at 0.0962 against 0.0990 at the copy's: 0.3 % of mean |log error| says nothing about a
# fused kernel's HBM roof, so the tolerance is 5e-3, not the 2e-3 it was.)
COPY_PRIOR_TOLERANCE = 5e-3
# Norms launch one program per row (model/ops/op.py norm_op): few rows cannot fill the SMs.
GRID_MEMORY_TERMS = (*STREAM_TERMS, "wave_latency_s", "saturation_blocks_per_sm")
# A fused MoE op states no grid (its ragged per-expert tiles are routing-dependent), so the
# wave and occupancy terms have nothing to act on.
MOE_TERMS = ("compute_fraction", "memory_fraction", "overhead_cycles", "overlap_power")
START = {"compute_fraction": 0.75, "memory_fraction": 0.8, "overhead_cycles": 6000.0,
         "overlap_power": 2.0, "wave_latency_s": 1e-6, "saturation_blocks_per_sm": 0.5,
         "wave_tail": 0.05, "bytes_per_sm_cycle": 4.0, "bytes_per_thread_us": 4.0,
         "input_pass_bytes": 2.5, "wave_latency_cycles": 2000.0,
         "softmax_cycles": 0.05, "flops_per_sm_cycle": 30000.0,
         "input_pass_row_cycles": 2.0, "l2_bytes_per_sm_cycle": 8.0}  # fmt: skip
# Quantized GEMM families also fit the SM-side work in series with their MMAs
# (model/pricing/roofline.py): the FP8 tables reach 0.71, 0.56 and 0.52 of the FP8 peak on the
# RTX PRO 6000, H100 and B300 (median, m, n, k >= 4,096), whose SMs issue 2,066, 7,568 and 15,356
# FP8 FLOP per cycle, so the faster a GPU's MMAs per SM, the more of a tile's time goes to work
# beside them. Leave-one-GPU-out, FP8 / NVFP4 GEMMs: median |error| 19.4 -> 17.8 %, p90 57.9 ->
# 57.2 % (RTX PRO 6000 FP8 25.6 -> 18.6 %, H100 14.0 -> 13.3 %, B300 15.8 -> 15.1 %). 16-bit
# GEMMs fit it at 150,000-380,000 FLOP per cycle, a few percent, and their held-out median gets
# no better (9.46 -> 9.57 %): they go without. A kind fitted on one GPU (a GPU's own file, NVFP4
# held out of one of its two GPUs) goes without too: its rows cannot tell the term from the
# compute fraction, and a pooled value held fixed would cap what the fraction can fit.
SERIES_TERM = "flops_per_sm_cycle"
# FP8 GEMMs (W8A8 per tensor with a dynamic scale, and block FP8) also fit cycles per input row
# of their input pass (model/pricing/input_pass.py): vLLM's amax takes one atomic max per row on
# one address, and they serialize. At n = k = 32 its calls grow 7.1 ns a row on the H100 (122 µs
# at m = 16,384), 6.1 on the B300, 3.7 on the RTX PRO 6000, where SGLang's and TensorRT-LLM's
# stay within 13 µs. Fitted per engine, in sample: vLLM 12.6, 13.0 and 8.2 cycles, its median /
# p90 |error| 14.9 / 42.5 -> 7.7 / 24.2 % (H100), 12.5 / 53.1 -> 5.6 / 19.9 % (B300), 9.0 / 34.2
# -> 6.8 / 25.2 % (RTX PRO 6000); SGLang and TensorRT-LLM fit 0.06-1.3 cycles and the same
# error. Block FP8 fits them too: TensorRT-LLM's on the RTX PRO 6000 (sm_120) grows 16 ns a row
# at n = k = 128 (264 µs at m = 16,384, where the B300's and H100's take 8-11 µs; the mechanism
# is not identified): 51 cycles, its error 13.9 / 50.6 -> 6.5 / 20.3 %; every other engine and
# GPU fits 0.5-1.2 and the same error, held out unchanged. NVFP4 (a static global scale: no
# amax) fits ~1 cycle and no better: it goes without, as does SmoothQuant (per-row scales).
ROW_TERM = "input_pass_row_cycles"
ROW_FAMILIES = ("fp8", "fp8_block")
# Kinds whose implementations differ by more than the model's error (two engines' attention
# kernels, ~1.4x at large KV on the A100): fitted on the per-shape fastest implementation.
FRONTIER_KINDS = ("attention", "attention_decode")
# Kinds whose one implementation runs tuned and untuned kernel configs (vLLM's fused_moe, ~2x
# apart at large token counts on the A100): fitted on the tuned rows (validate/moe_configs.py).
TUNED_KINDS = ("moe",)


class Calls(NamedTuple):
    """One GPU's measured calls of a kind: bytes moved, seconds, and which ran eager."""

    gpu: GPUSpec
    nbytes: np.ndarray
    measured_s: np.ndarray
    eager: np.ndarray


def roof_start(calls: list[Calls], term: str) -> float:
    """The eager SM-side roof term (EAGER_ROOF_TERMS) that the largest quarter of the eager
    calls run at, geometric mean over GPUs: where the fit of that term starts (on the roof's
    flat side, where HBM binds instead, the simplex stalls)."""
    values = []
    for c in calls:
        if not c.eager.any():
            continue
        large = c.eager & (c.nbytes >= np.quantile(c.nbytes[c.eager], 0.75))
        bandwidth = float(np.median(c.nbytes[large] / c.measured_s[large]))
        per_unit = eager_roof(c.gpu, KindEfficiency(**{term: 1.0}))  # bytes/s per unit of term
        values.append(bandwidth / max(per_unit, 1.0))
    return float(np.exp(np.mean(np.log(values)))) if values else START[term]


def floor_start(calls: list[Calls]) -> float:
    """Where the fit of the launch floor (overhead_cycles) starts: 0.9 of the cycles the
    fastest twentieth of the calls take, geometric mean over GPUs (the floor and a wave's latency
    both price a one-wave call, so a start far from the rows' floor can settle on the wave)."""
    values = [0.9 * float(np.quantile(c.measured_s, 0.05)) * (c.gpu.boost_clock_hz or 0.0)
              for c in calls]  # fmt: skip
    values = [v for v in values if v > 0]
    return float(np.exp(np.mean(np.log(values)))) if values else START["overhead_cycles"]


# Kinds of engines' kernels: fitted per engine too (profiles.py `engines`) and per family.
ENGINE_KINDS = ("gemm", "attention", "attention_decode", "moe")
FAMILY_KINDS = ("gemm", "moe")
# Rows per GPU and implementation a fit prices (a fixed-seed sample: 2.5 M calls are too many).
MAX_ROWS_PER_IMPL = 600
# Objective evaluations per kind (Nelder-Mead; from the pooled terms a GPU's own fit needs fewer).
FIT_EVALS = 800


def base_kind(kind: str) -> str:
    """`gemm` of `gemm:fp8`: the kind whose terms (terms_for) and rows (KIND_OPS) it has."""
    return kind.split(":")[0]


def fit_kinds(table: pd.DataFrame) -> list[str]:
    """The kinds a table can fit: every kind of KIND_OPS with rows, plus one per kernel family
    of its GEMM and MoE rows (`quant`, the engine's label), bf16 being the bare kind."""
    kinds = [k for k in KIND_OPS if kind_rows(table, k).any()]
    if "quant" in table.columns:
        for base in FAMILY_KINDS:
            labels = table.loc[table["op"].isin(KIND_OPS[base]), "quant"].dropna()
            kinds += [f"{base}:{q}" for q in sorted(distinct_text(labels) - set(PLAIN_FAMILIES))]
    families = attention_families(table).dropna()
    for base in FRONTIER_KINDS:
        labels = families[kind_rows(table, base, plain=False).reindex(families.index)]
        kinds += [f"{base}:{f}" for f in sorted(distinct_text(labels))]
    return kinds


def attention_families(table: pd.DataFrame) -> pd.Series:
    """Each attention row's kernel family (model/specs/quant.py attention_family: `fp8`,
    `kv_fp8`; None for 16-bit attention and for rows of other ops)."""
    out = pd.Series(None, index=table.index, dtype=object)
    if "dtype" not in table.columns:
        return out
    rows = table["op"].isin(KIND_OPS["attention_decode"])
    act = table.loc[rows, "dtype"].astype(str)
    kv = table.loc[rows, "kv_dtype" if "kv_dtype" in table.columns else "dtype"]
    kv = kv.fillna(table.loc[rows, "dtype"]).astype(str)
    decode = one_token(table)[rows]
    codes, keys = pd.MultiIndex.from_arrays([act, kv, decode]).factorize()  # each distinct once
    out.loc[rows] = np.array([attention_family(*k) or np.nan for k in keys], dtype=object)[codes]
    return out


def one_token(table: pd.DataFrame) -> pd.Series:
    """Decode-shaped rows (one new token per sequence), whichever phase they were measured as:
    pricing gives them the decode kinds and families (model/pricing/kinds.py kind_key)."""
    rows = table["op"].eq("attention_decode")
    if "seq_len" in table.columns:
        rows |= table["op"].eq("attention_prefill") & table["seq_len"].eq(1)
    return rows


def engine_of(impl: pd.Series) -> pd.Series:
    """The serving engine of each row's implementation (`vllm-0.24.0:<kernel>` -> vllm), or
    None for kernels no engine ships (Vidur's eager PyTorch, this project's own runs)."""
    name = map_distinct(impl, lambda v: str(v).split("-", 1)[0])  # 10⁶ rows, a few dozen names
    return name.where(name.isin(ENGINES)).astype(object)


def sample_rows(rows: pd.DataFrame, limit: int = MAX_ROWS_PER_IMPL) -> pd.DataFrame:
    """At most `limit` rows per GPU and implementation (fixed seed), in their table order."""
    picked = [
        g if len(g) <= limit else g.sample(limit, random_state=0)
        for _, g in rows.groupby(["gpu", "impl"], sort=False)
    ]
    return pd.concat(picked).sort_index() if picked else rows


def terms_for(name: str) -> tuple[str, ...]:
    kind, _, family = name.partition(":")
    if kind == "moe":
        return MOE_TERMS
    if kind == "norm":
        return GRID_MEMORY_TERMS
    if kind == "gemm":
        # No occupancy term: a GEMM's grid jumps at each 128-row tile, so bandwidth that grows
        # with blocks would price m = 129 faster than m = 128 (cuBLAS picks split-K or smaller
        # tiles instead); its small-grid costs are the wave and tile terms, monotone in m.
        terms = (*(t for t in FULL_TERMS if t != "saturation_blocks_per_sm"), "wave_tail", L2_TERM)
        # families with quantized activations quantize them in a pass of their own (W8A8 FP8,
        # block FP8, NVFP4, SmoothQuant: model/pricing/input_pass.py); the FP8 ones per row too
        quantized = family in FAMILIES and FAMILIES[family][0] not in ("bf16", "fp16")
        if not quantized:
            return terms
        return (*terms, "input_pass_bytes", SERIES_TERM, *(ROW_TERM,) * (family in ROW_FAMILIES))
    if kind == "elementwise":
        return STREAM_TERMS
    if kind == "attention_decode":
        return DECODE_TERMS
    if kind == "attention":  # prefill: its softmax's cycles per scored pair (pricing/softmax.py)
        return (*FULL_TERMS, "softmax_cycles")
    return MEMORY_TERMS


def kind_rows(table: pd.DataFrame, kind: str, plain: bool = True) -> pd.Series:
    """Rows a kind is fitted on. Attention splits as pricing does (pricing.kind_terms): one new
    token per sequence is decode-shaped, whichever phase the row was measured as. A kernel
    family's rows (`gemm:fp8`, `attention:fp8`) are its own; a bare kind's are its 16-bit rows
    (every precision's with `plain` False)."""
    base, _, family = kind.partition(":")
    rows = table["op"].isin(KIND_OPS[base])
    if base in FAMILY_KINDS and "quant" in table.columns:
        quant = table["quant"]
        rows &= quant.eq(family) if family else (quant.isna() | quant.isin(PLAIN_FAMILIES))
    if base in FRONTIER_KINDS and (family or plain):
        families = attention_families(table)
        rows &= families.eq(family) if family else families.isna()
    if base.startswith("attention"):
        decode = one_token(table)
        rows &= decode if base == "attention_decode" else ~decode
    return rows


def interior(term: str, value: float | None) -> bool:
    """Whether `value` maps back to a finite search coordinate (to_vector)."""
    if value is None:
        return False
    if term == "input_pass_bytes":
        return 0.0 < value < INPUT_PASS_MAX_BYTES
    if term.endswith("fraction") or term == "wave_tail":
        return 0.0 < value < 1.0
    return value > (1.0 if term == "overlap_power" else 0.0)


def to_params(x: np.ndarray, terms: tuple[str, ...]) -> dict[str, float]:
    """Unconstrained vector -> valid terms (fractions by logistic, positive terms by exp)."""
    out = {}
    for value, term in zip(x, terms, strict=True):
        if term.endswith("fraction") or term == "wave_tail":
            out[term] = float(1.0 / (1.0 + np.exp(-value)))
        elif term == "input_pass_bytes":  # bounded by what a quantization pass can move
            out[term] = INPUT_PASS_MAX_BYTES * float(1.0 / (1.0 + np.exp(-value)))
        elif term == "overlap_power":
            out[term] = 1.0 + float(np.exp(value))
        elif term.endswith("_s"):
            out[term] = float(np.exp(value)) * 1e-6
        else:
            out[term] = float(np.exp(value))
    return out


def to_vector(params: dict[str, float], terms: tuple[str, ...]) -> np.ndarray:
    x = []
    for term in terms:
        v = params[term]
        if term.endswith("fraction") or term == "wave_tail":
            x.append(np.log(v / (1.0 - v)))
        elif term == "input_pass_bytes":
            share = min(max(v / INPUT_PASS_MAX_BYTES, 1e-6), 1.0 - 1e-6)
            x.append(np.log(share / (1.0 - share)))
        elif term == "overlap_power":
            x.append(np.log(v - 1.0))
        elif term.endswith("_s"):
            x.append(np.log(v * 1e6))
        else:
            x.append(np.log(v))
    return np.array(x)
