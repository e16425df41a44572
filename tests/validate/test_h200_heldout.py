"""The lent H200 runs (scripts/gpu_check.sh, 2026-11-28) as a held-out check: no calibration has
seen an H200 (`calibrate fit` reads a results device only when named, and none names `h200`),
so these measurements test how the calibrated profile carries to a GPU it never saw.

Re-priced here with the current code, not read back from the files' `predicted_s`:
- whole steps of Llama-3-8B (`validate e2e`, compiled and eager), and
- single calls of the production baselines the suite times beside our kernels (cuBLAS bf16
  `torch.mm`, SDPA prefill and decode).

The ideal profile is a lower bound on every one of them (a second, model-free expectation);
the calibrated bands are issue 23's whole-step target (worst ≤ 25 %) and today's per-call
figures with their stated margins (docs/validation.md, "The lent-GPU runs (H200)").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rooflens.model.specs.presets import get_model
from rooflens.validate.compare import join
from rooflens.validate.e2e.predict import RunSetup, predict_phase
from rooflens.validate.runs import as_run

RESULTS = Path(__file__).resolve().parents[2] / "src" / "rooflens" / "validate" / "results"
E2E = sorted((RESULTS / "e2e" / "h200").glob("*-e2e.csv"))
SUITE = sorted((RESULTS / "h200").glob("*-quick.csv"))


def _steps() -> pd.DataFrame:
    frames = [pd.read_csv(path) for path in E2E]
    steps = pd.concat(frames, ignore_index=True)
    return steps[steps["op"].eq("total")].reset_index(drop=True)


def _repriced(steps: pd.DataFrame, profile: str) -> np.ndarray:
    out = []
    for r in steps.itertuples():
        setup = RunSetup(get_model(r.model), r.gpu, profile, r.dtype, r.per_launch_s, True)
        graphed = r.mode in ("compiled", "cuda graph")  # one launch per step, as the run took it
        out.append(predict_phase(setup, r.phase, r.batch, r.context, graphed).total_s)
    return np.array(out)


def test_the_committed_runs_are_an_h200s_with_provenance():
    assert E2E and SUITE, "the lent H200 runs are committed under validate/results/"
    steps = _steps()
    assert set(steps["device_name"]) == {"NVIDIA H200"} and set(steps["gpu"]) == {"h200"}
    assert {"compiled", "eager", "cuda graph"} <= set(steps["mode"])
    assert steps["git_commit"].str.fullmatch(r"[0-9a-f]{40}").all()


def test_whole_steps_on_an_unseen_h200_hold_the_ideal_bound_and_the_compiled_band():
    steps = _steps()
    measured = steps["measured_s"].to_numpy()
    ideal = _repriced(steps, "ideal")
    assert np.all(ideal < measured), "the ideal profile is a lower bound on every measured step"
    error = _repriced(steps, "calibrated") / measured - 1.0
    compiled = steps["mode"].eq("compiled").to_numpy()
    # Inductor fuses RoPE, SwiGLU and the norms as engines do: the calibrated step is the
    # engine's. 2026-11-28: median -11.6 %, worst -14.9 %; priced by the code of 2026-12-08
    # (norms in waves of resident programs): 10.5 %, 16.0 % (issue 23: <= 10 %, worst <= 25 %).
    assert np.max(np.abs(error[compiled])) <= 0.25
    assert np.median(np.abs(error[compiled])) <= 0.15
    # Eager runs the reference decoder's unfused torch RoPE and SwiGLU (11-19x and 2-5x the
    # fused kernels priced): slower than the calibrated step, never faster, by 17-27 % today.
    assert np.all(error[~compiled] < 0.0) and np.all(error[~compiled] > -0.35)


@pytest.mark.parametrize(
    ("op", "median_band", "p90_band"),
    [
        ("gemm", 0.20, 0.25),  # cuBLAS bf16; 2026-11-28: 14.6 %, p90 19.4 %
        ("attention_decode", 0.10, 0.15),  # SDPA; 4.2 %, p90 6.5 %
        ("attention_prefill", 0.12, 0.15),  # SDPA; 6.7 %, max 8.0 %
    ],
)
def test_production_baselines_per_call_on_an_unseen_h200(op, median_band, p90_band):
    """torch.mm and SDPA calls, as the suite timed them (CUDA graph, operands rotated past L2);
    `as_run` prices a weight-only row's baseline as the bf16 mm that ran. The norm baseline,
    F.rms_norm(x + residual), adds in a kernel of its own where engines fuse the add into the
    norm, so its rows are no production figure."""
    rows = pd.concat([pd.read_csv(path) for path in SUITE], ignore_index=True)
    rows = rows[
        rows["impl"].str.startswith("torch:") & rows["op"].eq(op) & rows["dtype"].eq("bf16")
    ]
    rows = as_run(rows)  # bf16 alone: a later run's FP8 GEMMs are another class
    assert len(rows) >= 2
    joined = join(rows, ("ideal", "calibrated"))
    measured = joined["measured_s"].to_numpy()
    assert np.all(joined["predicted_ideal_s"].to_numpy() < measured)
    error = np.abs(joined["predicted_calibrated_s"].to_numpy() / measured - 1.0)
    assert np.median(error) <= median_band
    assert np.quantile(error, 0.9) <= p90_band


KERNELS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h200" / "kernels.csv"


def test_fused_norms_on_an_unseen_h200_cost_their_bytes_not_a_per_sm_cap():
    """Our Triton RMSNorm (fused add, one program per row; the kernel whose grid the norm op
    states) on the lent H200: 2,048 x 8,192 and 4,096 x 4,096 move the same 134 MB and took the
    same time (36.6 and 36.4 us, 3.7 TB/s), above the 3.1 TB/s a wave of one program per SM
    capped a 4,096-wide norm at (1.39 us a wave on 132 SMs): priced 0.87x and 1.24x then. With
    the programs an SM holds at once counted (model/pricing/grid.py `resident_programs`) they
    price alike, within the copy roof's distance of the measured time."""
    bench = pd.read_csv(KERNELS)
    bench = bench[bench["kernel"].eq("rmsnorm")].rename(columns={"triton_s": "measured_s"})
    suite = pd.concat([pd.read_csv(path) for path in SUITE], ignore_index=True)
    suite = suite[suite["op"].eq("norm") & suite["impl"].eq("triton:rmsnorm")]
    cols = ["rows", "hidden", "residual", "measured_s"]
    rows = pd.concat([bench[cols], suite[cols]], ignore_index=True)
    rows = rows.assign(op="norm", norm="rmsnorm", dtype="bf16", impl="triton:rmsnorm", gpu="h200")
    joined = join(rows.drop_duplicates(["rows", "hidden"]).reset_index(drop=True),
                  ("ideal", "calibrated"))  # fmt: skip
    large = joined[joined["bytes"] >= 64e6]
    assert len(large) >= 3 and np.all(large["predicted_ideal_s"] < large["measured_s"])
    ratio = large["predicted_calibrated_s"] / large["measured_s"]
    assert np.all(np.abs(ratio - 1.0) <= 0.15), ratio.round(3).tolist()
    same = large[large["bytes"].between(130e6, 140e6)]
    assert set(same["hidden"]) == {4096.0, 8192.0}  # the two widths at the same bytes
    measured, priced = same["measured_s"], same["predicted_calibrated_s"]
    assert measured.max() / measured.min() < 1.02 and priced.max() / priced.min() < 1.02
