"""The `ideal` link model is a lower bound on every measured collective: each engine's own
all-reduce (vLLM, SGLang, TensorRT-LLM `custom_allreduce_perf.parquet`) and every NCCL
collective (`nccl_perf.parquet`) of the shared tables, on every measured GPU (A100, H100 and B300
on NVLink, the RTX PRO 6000 on PCIe).

Ideal charges one hop at the link's hardware floor (hardware/presets/links.yaml hop_latency_s,
NCCL's own per-hop figure: 0.6 µs on NVLink, 1.0 µs on PCIe) plus the ring's bytes at the
datasheet bandwidth. The one exclusion, counted and printed: calls that beat the ring's
bandwidth term itself. NCCL's NVLS all-reduce reduces inside the NVSwitch (H100's third
generation), moving (1 + 1/n)·S per GPU instead of the ring's 2(n−1)/n·S, so a 1 GiB call on 8
H100s can beat the ring; such a call must still respect the in-switch bound and the hop floor.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.systems import default_system
from rooflens.model.pricing.comm import (
    IDEAL_PROTOCOLS,
    Protocol,
    all_gather_s,
    all_reduce_s,
    all_to_all_s,
)
from rooflens.validate import aiconfigurator, custom_ar_fit

PRICE = {"all_reduce": all_reduce_s, "all_gather": all_gather_s,
         "reduce_scatter": all_gather_s, "alltoall": all_to_all_s}  # fmt: skip
MAX_BEATING_THE_RING = 3  # rows faster than the ring's bytes alone (NVLS), of ~2,800


@pytest.fixture(scope="module")
def rows(measured_dir) -> pd.DataFrame:
    """Every measured collective: source, gpu, op, n_gpus, bytes, measured_s."""
    own = custom_ar_fit.load_custom_allreduce(measured_dir).assign(op="all_reduce")
    nccl = aiconfigurator.load_nccl(measured_dir)
    nccl = nccl.rename(columns={"message_bytes": "bytes"}).assign(engine="nccl")
    cols = ["engine", "gpu", "op", "n_gpus", "bytes", "measured_s"]
    return pd.concat([own[cols], nccl[cols]], ignore_index=True)


def priced(rows: pd.DataFrame, protocols: tuple[Protocol, ...]) -> pd.DataFrame:
    out = rows.assign(ideal_s=np.nan, ring_bytes_s=np.nan, floor_s=np.nan)
    for (gpu, op, n), g in rows.groupby(["gpu", "op", "n_gpus"]):
        system = default_system(get_gpu(str(gpu)))
        size = g["bytes"].to_numpy(float)
        out.loc[g.index, "ideal_s"] = PRICE[str(op)](size, int(n), system, protocols)
        no_latency = (Protocol(1.0, 0.0, 0.0),)
        out.loc[g.index, "ring_bytes_s"] = PRICE[str(op)](size, int(n), system, no_latency)
        out.loc[g.index, "floor_s"] = system.intra_node.floor_latency_s
        if op == "all_reduce":  # NVLS: (1 + 1/n)·S through each GPU's link, in the switch
            nvls = (1 + 1 / int(n)) * size / system.intra_node.bytes_per_s
            out.loc[g.index, "in_switch_s"] = nvls
    return out


def test_tables_cover_every_engine_collective_and_gpu(rows: pd.DataFrame) -> None:
    assert len(rows) > 2500
    assert set(rows["engine"]) == {"vllm", "sglang", "trtllm", "nccl"}
    assert set(rows["gpu"]) == {"a100-sxm-80gb", "h100-sxm", "b300", "rtx-pro-6000"}
    assert set(rows["op"]) == set(PRICE)


def test_ideal_is_below_every_measured_collective(rows: pd.DataFrame) -> None:
    p = priced(rows, IDEAL_PROTOCOLS)
    above = p[p["ideal_s"] > p["measured_s"]]
    print(f"\nideal above measured: {len(above)} of {len(p)} rows")
    if len(above):
        print(above[["engine", "gpu", "op", "n_gpus", "bytes", "measured_s", "ideal_s"]])
    assert len(above) <= MAX_BEATING_THE_RING
    # The exclusion: each such call beats the ring's bytes alone, is an all-reduce on NVSwitch,
    # and still takes at least the hop floor plus the in-switch reduction's bytes.
    assert (above["measured_s"] < above["ring_bytes_s"]).all()
    assert (above["op"] == "all_reduce").all() and (above["n_gpus"] > 2).all()
    assert (above["measured_s"] >= above["floor_s"] + above["in_switch_s"]).all()
    small = p["bytes"] <= 2**20  # decode-sized messages: latency-bound, no exclusion at all
    assert (p.loc[small, "ideal_s"] <= p.loc[small, "measured_s"]).all()


def test_h100_tp8_small_all_reduce_floor(rows: pd.DataFrame) -> None:
    """The issue's case: a 16 KiB all-reduce on 8 H100s. The engines measure ~4 µs; NCCL's
    ~5 µs step latency as the ideal latency would sit above the fastest of them."""
    sel = rows[(rows["gpu"] == "h100-sxm") & (rows["n_gpus"] == 8) & (rows["bytes"] == 16384)
               & (rows["op"] == "all_reduce")]  # fmt: skip
    system = default_system(get_gpu("h100-sxm"))
    ideal = float(all_reduce_s(16384.0, 8, system, IDEAL_PROTOCOLS))
    step_latency = float(all_reduce_s(16384.0, 8, system, (Protocol(1.0, 1.0, 0.0),)))
    assert set(sel["engine"]) == {"vllm", "sglang", "trtllm", "nccl"}
    assert ideal < 1e-6 < sel["measured_s"].min() < step_latency


def test_nccl_step_latency_would_not_be_a_bound(rows: pd.DataFrame) -> None:
    # The previous ideal (one NCCL step, links.yaml latency_s) sat above hundreds of calls:
    # the hop floor is what makes the bound hold.
    p = priced(rows, (Protocol(1.0, 1.0, 0.0),))
    assert (p["ideal_s"] > p["measured_s"]).sum() > 100
