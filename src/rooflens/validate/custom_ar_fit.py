"""Fit the serving engines' own all-reduce (`custom_allreduce_perf.parquet` of the shared
measurements) as one α-β protocol per engine: what a decode step's small all-reduces cost.

vLLM, SGLang and TensorRT-LLM all-reduce small messages inside one NVLink node with a kernel of
their own (one-shot: every GPU reads its peers' buffers over NVLink through IPC handles, one
launch, no NCCL protocol setup) and fall back to NCCL above a size (vLLM's CustomAllreduce
`max_size` 8 MiB). On the H100 at TP 8 a 16 kB all-reduce takes ~4 µs there against NCCL's
~16 µs. The fit takes the engines' CUDA-graph rows (`backend` *_graph; TensorRT-LLM's table has
no eager rows) of every NVLink GPU up to that size and finds, per engine, the terms of
model/pricing/comm.py's `Protocol` (t = (s0 + steps·s1)·λ + bytes / (f·β), λ and β the GPU's
NVLink latency and bandwidth; below vLLM's one-shot switch n − 1 steps and (n − 1)·S bytes,
above it the ring's 2(n − 1) steps and 2(n − 1)/n·S: model/pricing/custom_allreduce.py
`custom_all_reduce_s`), with validate/comm_fit.py's non-negative least squares on relative
error, so it carries to an unmeasured NVLink GPU through its datasheet. PCIe-only parts
(RTX PRO 6000) are left out of that pooled fit: engines turn the custom all-reduce off on more
than two PCIe GPUs and the table there matches NCCL.

Each measured GPU also gets a protocol per engine fitted on its own rows (`gpus` in the file),
PCIe parts included, since a GPU's table is what the engine's all-reduce costs on that machine,
whichever kernel ran. Pooled, the protocols missed per GPU (engine-steps benchmark, decode
all-reduces, ours / measured, median over scenarios): H100 1.2, B300 0.73-0.79, A100 0.66-0.98,
and the RTX PRO 6000 2.2 (NCCL's A100-fitted protocol on PCIe: 23 us against 5-7 us measured at
16 kB over 2 GPUs). model/pricing/custom_allreduce.py prices a GPU with its own protocols, else
those of a measured GPU of the same SM design (an H200 the H100's, a B200 the B300's:
hardware/profiles.py `sibling_of`), else the pooled ones on NVLink and NCCL elsewhere.

    python -m rooflens.validate.custom_ar_fit [--write]

writes hardware/calibration/comm-custom-allreduce.yaml, which
model/pricing/custom_allreduce.py reads.
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.systems import default_system
from rooflens.io.files import atomic_write_text
from rooflens.model.pricing.comm import Protocol
from rooflens.model.pricing.custom_allreduce import (
    CUSTOM_ALLREDUCE_FILE,
    CUSTOM_ALLREDUCE_MAX_BYTES,
    custom_all_reduce_s,
    custom_all_reduce_terms,
)
from rooflens.validate.comm_fit import _nonneg_wls
from rooflens.validate.measured_files import DEFAULT_ROOT, MS, dtype_names, gpu_id, read_table

BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


def load_custom_allreduce(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """Graph-mode rows of every engine's all-reduce table: engine, gpu, n_gpus, bytes,
    measured_s."""
    frames = []
    for path in sorted(root.glob("aiconfigurator-*/comm/*/*/custom_allreduce_perf.parquet")):
        d = read_table(path, ("framework", "device", "allreduce_dtype", "num_gpus",
                              "message_size", "latency"))  # fmt: skip
        if d is None:
            continue
        if "backend" in d.columns:
            d = d[d["backend"].astype(str).str.endswith("_graph")]
        size = dtype_names(d["allreduce_dtype"]).map(BYTES).astype(float)
        frames.append(pd.DataFrame({
            "engine": path.parts[-3], "gpu": d["device"].map(gpu_id),
            "n_gpus": d["num_gpus"].astype(int), "bytes": d["message_size"] * size,
            "measured_s": d["latency"] * MS,
        }))  # fmt: skip
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def nvlink_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows of GPUs with NVLink, up to the size engines use their own all-reduce for."""
    nvlink = rows["gpu"].map(lambda g: get_gpu(str(g)).nvlink_bytes_per_s > 0)
    return rows[nvlink & (rows["bytes"] <= CUSTOM_ALLREDUCE_MAX_BYTES)].reset_index(drop=True)


def fit_engine(rows: pd.DataFrame) -> Protocol:
    """One protocol over one engine's rows, each GPU's link from its datasheet."""
    columns, times = [], []
    for gpu, g in rows.groupby("gpu"):
        link = default_system(get_gpu(str(gpu))).intra_node
        steps, moved = custom_all_reduce_terms(g["bytes"].to_numpy(float), g["n_gpus"].to_numpy())
        lam = np.full(len(g), link.latency_s)
        columns.append(np.stack([lam, steps * lam, moved / link.bytes_per_s], axis=1))
        times.append(g["measured_s"].to_numpy(float))
    coef = _nonneg_wls(np.concatenate(columns), np.concatenate(times))
    return Protocol(float(1.0 / max(coef[2], 1e-9)), float(coef[0]), float(coef[1]))


def predict(rows: pd.DataFrame, protocol: Protocol) -> np.ndarray:
    out = np.zeros(len(rows))
    groups: dict[Any, Any] = rows.groupby(["gpu", "n_gpus"]).indices  # (gpu, n) -> positions
    for (gpu, n), idx in groups.items():
        system = default_system(get_gpu(str(gpu)))
        size = rows["bytes"].to_numpy(float)[idx]
        out[idx] = custom_all_reduce_s(size, int(n), system, protocol)
    return out


def _fitted(rows: pd.DataFrame) -> tuple[Protocol, dict[str, Any]]:
    """A protocol fitted on `rows` and its record (rows, median / p90 |error|)."""
    rows = rows.reset_index(drop=True)
    protocol = fit_engine(rows)
    error = np.abs(predict(rows, protocol) / rows["measured_s"].to_numpy(float) - 1.0)
    return protocol, {"rows": len(rows),
                      "median_abs_error": round(float(np.median(error)), 4),
                      "p90_abs_error": round(float(np.quantile(error, 0.9)), 4)}  # fmt: skip


def fit_all(rows: pd.DataFrame) -> dict[str, tuple[Protocol, dict]]:
    """Per engine: its protocol and its fit record (rows, GPUs, median / p90 |error|)."""
    out = {}
    for engine, g in nvlink_rows(rows).groupby("engine"):
        protocol, record = _fitted(g)
        gpus = sorted(g["gpu"].unique().tolist())
        out[str(engine)] = (protocol, {"rows": record.pop("rows"), "gpus": gpus, **record})
    return out


def fit_per_gpu(rows: pd.DataFrame) -> dict[str, dict[str, tuple[Protocol, dict]]]:
    """Per measured GPU (PCIe ones too) and engine: a protocol fitted on that GPU's rows up to
    the custom all-reduce's size, with its fit record."""
    sized = rows[rows["bytes"] <= CUSTOM_ALLREDUCE_MAX_BYTES]
    out: dict[str, dict[str, tuple[Protocol, dict]]] = {}
    for (gpu, engine), g in sized.groupby(["gpu", "engine"]):
        out.setdefault(str(gpu), {})[str(engine)] = _fitted(g)
    return out


def _terms(p: Protocol, record: dict) -> dict[str, Any]:
    return {"bandwidth_fraction": round(p.bandwidth_fraction, 4),
            "latency_base_scale": round(p.latency_base_scale, 4),
            "latency_step_scale": round(p.latency_step_scale, 4), "fit": record}  # fmt: skip


def calibration_yaml(fits: dict[str, tuple[Protocol, dict]],
                     per_gpu: dict[str, dict[str, tuple[Protocol, dict]]]) -> str:  # fmt: skip
    header = (
        "# The serving engines' own all-reduce (one node, messages up to max_bytes), one\n"
        "# protocol per engine pooled over the NVLink GPUs and one per measured GPU (gpus):\n"
        "# t = (s0 + steps*s1) * link latency + bytes / (f * link bandwidth); one-shot below\n"
        "# vLLM's switch (n-1 steps, (n-1)*S bytes), else the ring's 2(n-1) steps and\n"
        "# 2(n-1)/n*S (model/pricing/custom_allreduce.py).\n"
        "# Written by `python -m rooflens.validate.custom_ar_fit --write`; do not edit by hand.\n"
    )
    data = {
        "source": "aiconfigurator 0.12 custom_allreduce_perf.parquet (CUDA-graph rows), fitted "
        f"{datetime.date.today().isoformat()}",
        "max_bytes": CUSTOM_ALLREDUCE_MAX_BYTES,
        "engines": {engine: _terms(p, record) for engine, (p, record) in sorted(fits.items())},
        "gpus": {gpu: {engine: _terms(p, record) for engine, (p, record) in sorted(e.items())}
                 for gpu, e in sorted(per_gpu.items())},
    }  # fmt: skip
    return header + yaml.safe_dump(data, sort_keys=False, width=100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measured", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--write", action="store_true", help=f"write {CUSTOM_ALLREDUCE_FILE}")
    args = parser.parse_args(argv)
    rows = load_custom_allreduce(args.measured)
    text = calibration_yaml(fit_all(rows), fit_per_gpu(rows))
    if args.write:
        atomic_write_text(CUSTOM_ALLREDUCE_FILE, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
