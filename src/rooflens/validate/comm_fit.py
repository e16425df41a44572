"""Fit and check the communication model (model/pricing/comm.py) against real collective
measurements.

Data (read-only, ../shared/data/measured/, see its README):
- aiconfigurator `comm/nccl/2.27.3/nccl_perf.parquet`: nccl-tests on one DGX A100 (2, 4, 8 GPUs),
  `message_size` in ELEMENTS of `nccl_dtype` (half = 2 B, int8 = 1 B) of the nccl-tests buffer
  (aiconfigurator collector: `message_size = size // bytes_per_element`), `latency` in ms.
- Vidur `network/<topology>/all_reduce.csv`: torch.distributed all-reduce, `size` in bytes,
  `time_stats.all_reduce.median` in ms, `num_workers`, `devices_per_node`.

The fit: NCCL's protocols as two α-β lines, t = min_p [s0_p·λ + steps·s1_p·λ + bytes/(f_p·β)]
(NCCL src/graph/tuning.cc prices each protocol this way), fitted to the NCCL all-reduce rows by
alternating assignment (each row to its cheaper protocol) and least squares on relative error
(rows weighted by 1/t), with non-negative terms. Run `python -m rooflens.validate.comm_fit --write`
to
regenerate hardware/calibration/comm-a100.yaml; tests/validate/test_comm_fit.py refits and compares.
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

from rooflens.hardware.presets import get_gpu, links
from rooflens.hardware.spec import SystemSpec
from rooflens.hardware.systems import default_system
from rooflens.io.files import atomic_write_text
from rooflens.io.units import fmt_bytes
from rooflens.model.pricing.comm import (
    COMM_CALIBRATION_FILE,
    IDEAL_PROTOCOLS,
    Protocol,
    all_gather_s,
    all_reduce_s,
    all_to_all_s,
)
from rooflens.validate import aiconfigurator

VIDUR_NETWORK = Path("vidur/network")
NCCL_OPS = {"all_reduce": "all_reduce", "all_gather": "all_gather",
            "reduce_scatter": "reduce_scatter", "alltoall": "all_to_all"}  # fmt: skip
SIZE_BUCKETS = (0, 64e3, 1e6, 16e6, np.inf)
SIZE_LABELS = ("<64 kB", "64 kB-1 MB", "1-16 MB", ">16 MB")


def a100_systems() -> dict[str, SystemSpec]:
    """The machines the measurements come from. The NCCL table is one DGX A100 (NVLink3 through
    NVSwitch, HDR InfiniBand between nodes); Vidur's `a100_pairwise_nvlink` box has A100s joined
    in NVLink-bridged pairs, the pairs over PCIe 4, modelled as 2-GPU "nodes" linked by PCIe."""
    gpu = get_gpu("a100-sxm-80gb")
    table = links()
    dgx = default_system(gpu, 8).model_copy(update={"inter_node": table["infiniband-hdr"]})
    pairs = SystemSpec(
        id="a100-nvlink-pairs",
        gpu=gpu,
        gpus_per_node=2,
        intra_node=table["nvlink-bridge-ampere-a100"],
        inter_node=table["pcie4"],
    )
    return {"a100_dgx": dgx, "a100_pairwise_nvlink": pairs}


def load_nccl(measured_dir: Path) -> pd.DataFrame:
    """The A100's NCCL rows as source, collective, n_gpus, per_node, bytes, measured_s, system,
    read by the one NCCL loader (validate/aiconfigurator.py). The other GPUs' NCCL tables are
    not fitted here: the protocols are in link latencies and carry over through each link's
    datasheet; the engines' own all-reduce is validate/custom_ar_fit.py."""
    raw = aiconfigurator.load_nccl(measured_dir)
    raw = raw[raw["gpu"] == "a100-sxm-80gb"]  # the DGX A100 these protocols are fitted on
    return pd.DataFrame(
        {
            "source": "nccl-a100",
            "collective": raw["op"].map(NCCL_OPS),
            "n_gpus": raw["n_gpus"].astype(int),
            "per_node": raw["n_gpus"].astype(int),
            "bytes": raw["message_bytes"],
            "measured_s": raw["measured_s"],
            "system": "a100_dgx",
        }
    )


def load_vidur_all_reduce(measured_dir: Path) -> pd.DataFrame:
    frames = []
    for topology in sorted(a100_systems()):
        raw = pd.read_csv(measured_dir / VIDUR_NETWORK / topology / "all_reduce.csv")
        n = raw["num_workers"].astype(int)
        frames.append(
            pd.DataFrame(
                {
                    "source": f"vidur-{topology}",
                    "collective": "all_reduce",
                    "n_gpus": n,
                    "per_node": raw["devices_per_node"].astype(int).clip(upper=2)
                    if topology == "a100_pairwise_nvlink"
                    else raw["devices_per_node"].astype(int),
                    "bytes": raw["size"].astype(float),
                    "measured_s": raw["time_stats.all_reduce.median"] * 1e-3,
                    "system": topology,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def predict_rows(rows: pd.DataFrame, protocols: tuple[Protocol, ...]) -> np.ndarray:
    """Model time of each measured row under a link model (grouped: group sizes are ints)."""
    systems = a100_systems()
    out = np.zeros(len(rows))
    groups = rows.groupby(["collective", "n_gpus", "per_node", "system"]).indices
    for key, idx in groups.items():
        kind, n, g, name = cast(tuple[str, int, int, str], key)
        size = rows["bytes"].to_numpy(dtype=np.float64)[idx]
        system = systems[name]
        if kind == "all_reduce":
            out[idx] = all_reduce_s(size, int(n), system, protocols, int(g))
        elif kind == "all_to_all":
            out[idx] = all_to_all_s(size, int(n), system, protocols, per_node=int(g))
        else:
            out[idx] = all_gather_s(size, int(n), system, protocols, int(g))
    return out


def _ring_terms(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Per row: ring steps and link-bytes / bandwidth (one node), plus the link's λ and β."""
    link = a100_systems()["a100_dgx"].intra_node
    n = rows["n_gpus"].to_numpy(dtype=np.float64)
    steps = np.where(rows["collective"] == "all_reduce", 2 * (n - 1), n - 1)
    moved = steps / n * rows["bytes"].to_numpy(dtype=np.float64)
    return steps, moved / link.bytes_per_s, link.latency_s, link.bytes_per_s


def _nonneg_wls(X: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Least squares on relative error, t ≈ X·c with c ≥ 0 (drop negative terms, refit)."""
    active = np.ones(X.shape[1], dtype=bool)
    coef = np.zeros(X.shape[1])
    w = 1.0 / t
    while active.any():
        sol, *_ = np.linalg.lstsq(X[:, active] * w[:, None], t * w, rcond=None)
        if (sol >= 0).all():
            coef[:] = 0.0
            coef[active] = sol
            return coef
        active[np.flatnonzero(active)[np.argmin(sol)]] = False
    return coef


def fit_protocols(
    rows: pd.DataFrame, n_protocols: int = 2, iters: int = 50
) -> tuple[Protocol, ...]:
    """Fit `n_protocols` α-β lines to one-node ring collectives; the time is their minimum."""
    steps, x, latency_s, _ = _ring_terms(rows)
    t = rows["measured_s"].to_numpy(dtype=np.float64)
    X = np.stack([np.full_like(t, latency_s), steps * latency_s, x], axis=1)
    # Start: smaller messages on the first protocol, larger on the last (by bytes per GPU).
    ranks = np.argsort(np.argsort(x))
    assign = np.minimum(ranks * n_protocols // len(x), n_protocols - 1)
    coefs = np.zeros((n_protocols, 3))
    for _ in range(iters):
        for p in range(n_protocols):
            if (assign == p).sum() >= 3:
                coefs[p] = _nonneg_wls(X[assign == p], t[assign == p])
        preds = np.where(coefs[:, 2][None, :] > 0, X @ coefs.T, np.inf)
        new = np.argmin(preds, axis=1)
        if (new == assign).all():
            break
        assign = new
    return tuple(Protocol(float(1.0 / c[2]), float(c[0]), float(c[1])) for c in coefs if c[2] > 0)


def error_table(rows: pd.DataFrame, protocols: tuple[Protocol, ...]) -> pd.DataFrame:
    """Rows with ideal and calibrated predictions and signed relative errors."""
    out = rows.copy()
    out["ideal_s"] = predict_rows(rows, IDEAL_PROTOCOLS)
    out["calibrated_s"] = predict_rows(rows, protocols)
    out["ideal_err"] = out["ideal_s"] / out["measured_s"] - 1.0
    out["calibrated_err"] = out["calibrated_s"] / out["measured_s"] - 1.0
    out["size"] = pd.cut(out["bytes"], SIZE_BUCKETS, labels=SIZE_LABELS, right=False)
    return out


def summary(errors: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Median |error| of both models and the share of rows the ideal model under-predicts."""
    return (
        errors.assign(
            ideal=errors["ideal_err"].abs(),
            calibrated=errors["calibrated_err"].abs(),
            ideal_below=errors["ideal_s"] <= errors["measured_s"],
        )
        .groupby(by, observed=True)
        .agg(
            rows=("ideal", "size"),
            ideal_median_abs_err=("ideal", "median"),
            calibrated_median_abs_err=("calibrated", "median"),
            ideal_lower_bound_share=("ideal_below", "mean"),
        )
        .reset_index()
    )


def calibration_yaml(protocols: tuple[Protocol, ...], rows: pd.DataFrame) -> str:
    errs = error_table(rows, protocols)
    median = float(errs["calibrated_err"].abs().median())
    sizes = "/".join(str(n) for n in sorted(rows["n_gpus"].unique()))
    lo, hi = float(rows["bytes"].min()), float(rows["bytes"].max())
    lines = [
        "# Communication calibration: NCCL protocols fitted to measured all-reduce on A100.",
        "# Written by `python -m rooflens.validate.comm_fit --write`; do not edit by hand.",
        "# t = min over protocols [(s0 + steps*s1) * link latency + bytes / (f * link bandwidth)]",
        "# (model/pricing/comm.py), latencies in multiples of the link's nominal latency_s, so the",
        "# fit carries over to other links. Applies to every GPU under the `calibrated` profile.",
        "gpu_id: a100-sxm-80gb",
        "source: >-",
        "  aiconfigurator NCCL 2.27.3 nccl_perf.parquet, all_reduce on one DGX A100 (NVLink3),",
        f"  {len(rows)} rows, {sizes} GPUs, {fmt_bytes(lo)} to {fmt_bytes(hi)},",
        f"  fitted {datetime.date.today().isoformat()};",
        f"  median |error| {median:.3f}",
        "protocols:",
    ]
    for name, p in zip(("low_latency", "bandwidth"), protocols, strict=False):
        lines += [
            f"  {name}:",
            f"    bandwidth_fraction: {p.bandwidth_fraction:.4f}",
            f"    latency_base_scale: {p.latency_base_scale:.4f}",
            f"    latency_step_scale: {p.latency_step_scale:.4f}",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measured", type=Path, default=Path("../shared/data/measured"))
    parser.add_argument("--write", action="store_true", help=f"write {COMM_CALIBRATION_FILE}")
    args = parser.parse_args(argv)
    nccl = load_nccl(args.measured)
    all_reduce = nccl[nccl["collective"] == "all_reduce"].reset_index(drop=True)
    protocols = fit_protocols(all_reduce)
    text = calibration_yaml(protocols, all_reduce)
    if args.write:
        atomic_write_text(COMM_CALIBRATION_FILE, text)
    print(text)
    rows = pd.concat([nccl, load_vidur_all_reduce(args.measured)], ignore_index=True)
    table = summary(error_table(rows, protocols), ["source", "collective", "n_gpus", "per_node"])
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
