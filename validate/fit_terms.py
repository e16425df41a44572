"""What `rooflens calibrate fit` fits for each operator kind: the measured ops a kind's rows
are, the `KindEfficiency` terms it fits (hardware/profiles.py) and where the search starts,
which kinds are fitted on a subset (the attention frontier, tuned MoE configs), and the map
between valid terms and the unconstrained vector Nelder-Mead searches (logistic for fractions,
exp for positive terms). The fit itself is validate/calibrate.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

KIND_OPS: dict[str, tuple[str, ...]] = {
    "gemm": ("gemm",),
    "attention": ("attention_prefill",),
    "attention_decode": ("attention_decode", "attention_prefill"),
    "norm": ("norm",),
    "elementwise": ("elementwise",),
    "embedding": ("embedding",),
    "moe": ("moe",),
}
FULL_TERMS = ("compute_fraction", "memory_fraction", "overhead_s", "overlap_power",
              "wave_latency_s", "saturation_blocks_per_sm")  # fmt: skip
# Memory kinds measured as eager PyTorch kernels also fit their bytes per SM cycle (the
# throughput roof of such kernels, model/pricing.py); it has no effect on fused calls.
MEMORY_TERMS = ("memory_fraction", "overhead_s", "bytes_per_sm_cycle")
# Norms launch one program per row (model/op.py norm_op): few rows cannot fill the SMs.
GRID_MEMORY_TERMS = (*MEMORY_TERMS, "wave_latency_s", "saturation_blocks_per_sm")
# A fused MoE op states no grid (its ragged per-expert tiles are routing-dependent), so the
# wave and occupancy terms have nothing to act on.
MOE_TERMS = ("compute_fraction", "memory_fraction", "overhead_s", "overlap_power")
START = {"compute_fraction": 0.75, "memory_fraction": 0.8, "overhead_s": 4e-6,
         "overlap_power": 2.0, "wave_latency_s": 1e-6, "saturation_blocks_per_sm": 0.5,
         "wave_tail": 0.05, "bytes_per_sm_cycle": 4.0}  # fmt: skip
# Kinds whose implementations differ by more than the model's error (two engines' attention
# kernels, ~1.4x at large KV on the A100): fitted on the per-shape fastest implementation.
FRONTIER_KINDS = ("attention", "attention_decode")
# Kinds whose one implementation runs tuned and untuned kernel configs (vLLM's fused_moe, ~2x
# apart at large token counts on the A100): fitted on the tuned rows (validate/moe_configs.py).
TUNED_KINDS = ("moe",)


def terms_for(kind: str) -> tuple[str, ...]:
    if kind == "moe":
        return MOE_TERMS
    if kind == "norm":
        return GRID_MEMORY_TERMS
    if kind == "gemm":
        # No occupancy term: a GEMM's grid jumps at each 128-row tile, so bandwidth that grows
        # with blocks would price m = 129 faster than m = 128 (cuBLAS picks split-K or smaller
        # tiles instead); its small-grid costs are the wave and tile terms, monotone in m.
        return (*(t for t in FULL_TERMS if t != "saturation_blocks_per_sm"), "wave_tail")
    return FULL_TERMS if kind in ("gemm", "attention", "attention_decode") else MEMORY_TERMS


def kind_rows(table: pd.DataFrame, kind: str) -> pd.Series:
    """Rows a kind is fitted on. Attention splits as pricing does (pricing.kind_terms): one new
    token per sequence is decode-shaped, whichever phase the row was measured as."""
    rows = table["op"].isin(KIND_OPS[kind])
    if kind.startswith("attention"):
        one_token = table["op"].eq("attention_decode")
        if "seq_len" in table.columns:
            one_token |= table["op"].eq("attention_prefill") & table["seq_len"].eq(1)
        rows &= one_token if kind == "attention_decode" else ~one_token
    return rows


def interior(term: str, value: float | None) -> bool:
    """Whether `value` maps back to a finite search coordinate (to_vector)."""
    if value is None:
        return False
    if term.endswith("fraction") or term == "wave_tail":
        return 0.0 < value < 1.0
    return value > (1.0 if term == "overlap_power" else 0.0)


def to_params(x: np.ndarray, terms: tuple[str, ...]) -> dict[str, float]:
    """Unconstrained vector -> valid terms (fractions by logistic, positive terms by exp)."""
    out = {}
    for value, term in zip(x, terms, strict=True):
        if term.endswith("fraction") or term == "wave_tail":
            out[term] = float(1.0 / (1.0 + np.exp(-value)))
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
        elif term == "overlap_power":
            x.append(np.log(v - 1.0))
        elif term.endswith("_s"):
            x.append(np.log(v * 1e6))
        else:
            x.append(np.log(v))
    return np.array(x)
