"""Each measured GPU's stream efficiency, and the bandwidth a fit pooled over GPUs prices each
GPU's rows with.

A GPU's memory system reaches its own share of the datasheet bandwidth: a bf16 GEMM that only
streams its weights (m ≤ 16, out of L2) reads at 0.675 of the A100's 2.0 TB/s and 0.894 of the
RTX PRO 6000's 1.6 TB/s GDDR7, whatever the engine. A kernel family measured on some GPUs only
(NVFP4 on the B300 and RTX PRO 6000, FP8 off the Ampere cards) would otherwise carry those GPUs'
share into its pooled `memory_fraction`: TensorRT-LLM's NVFP4 fraction pooled from the RTX PRO
6000 alone priced the B300's (held out) weight streams 36 % fast. So a pooled fit prices each
GPU's GEMM and fused-MoE rows (STREAM_KINDS) at its datasheet bandwidth × its efficiency over
the pool's geometric mean: a family's fraction is then the pool's efficiency × what the family
reaches beside bf16 on the GPUs that ran it, and a GPU without measurements gets the pool's. A
GPU's own fit is unchanged (one GPU: scale 1). docs/validation.md, twenty-second pass, has the
figures; attention is fitted unscaled (scaled, it lost on the folds)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.spec import GPUSpec
from rooflens.model.pricing.kernel_table import predict_frame
from rooflens.model.pricing.l2_resident import REPLAY_COPIES, fits_l2
from rooflens.model.specs.quant import PLAIN_FAMILIES

STREAM_M = 16  # rows up to this m stream their weights (compute-bound from m ≈ 150 at bf16)
STREAM_MIN_S = 10e-6  # ideal time long enough that the launch floor (2-5 µs) is a small share
STREAM_KINDS = ("gemm", "moe")  # the kinds that stream weights as the measured GEMMs do


def stream_efficiency(table: pd.DataFrame) -> dict[str, float]:
    """Per GPU with such rows: the median over implementations of the median ideal / measured
    time of its memory-bound bf16 GEMMs (m ≤ STREAM_M, ideal ≥ STREAM_MIN_S, replayed copies
    out of L2 by l2_resident.fits_l2's rule; a row that states no copies counts as cold)."""
    out: dict[str, float] = {}
    if "m" not in table.columns:  # no GEMM rows: nothing streams weights
        return out
    quant = table.get("quant", pd.Series(np.nan, index=table.index))
    plain = quant.isna() | quant.astype(str).isin(PLAIN_FAMILIES)
    rows = table[table["op"].eq("gemm") & plain & (table["m"] <= STREAM_M)]
    for gpu_id, group in rows.groupby("gpu"):
        gpu = get_gpu(str(gpu_id))
        priced = predict_frame(group, gpu, "ideal")
        stated = priced.get(REPLAY_COPIES, pd.Series(np.nan, index=priced.index))
        copies = np.asarray(stated, dtype=np.float64)
        cold = ~fits_l2(copies, priced["bytes"].to_numpy(float), gpu)
        keep = priced["bound"].eq("memory") & cold & (priced["predicted_s"] >= STREAM_MIN_S)
        kept = priced[keep]
        if kept.empty:
            continue
        ratio = kept["predicted_s"] / kept["measured_s"]
        out[str(gpu_id)] = round(float(ratio.groupby(kept["impl"]).median().median()), 4)
    return out


def stream_scales(table: pd.DataFrame) -> dict[str, float]:
    """Per GPU of a pooled table: its stream efficiency over the geometric mean of every GPU's
    that has one (1 for a GPU without memory-bound bf16 GEMMs); empty for a single GPU."""
    efficiency = stream_efficiency(table)
    if len(efficiency) < 2:
        return {}
    mean = float(np.exp(np.mean(np.log(list(efficiency.values())))))
    return {gpu: round(e / mean, 4) for gpu, e in sorted(efficiency.items())}


def scaled_gpu(gpu: GPUSpec, scales: dict[str, float] | None) -> GPUSpec:
    """The GPU whose bandwidth a pooled fit prices its rows at (datasheet × scale)."""
    scale = (scales or {}).get(gpu.id, 1.0)
    if scale == 1.0:
        return gpu
    return gpu.model_copy(update={"hbm_bytes_per_s": gpu.hbm_bytes_per_s * scale})
