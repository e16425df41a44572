"""Leave-one-GPU-out cross-validation (validate/cv.py) and the architecture-generation rule
(validate/generation.py), on tables generated from known terms: fractions that hold on every
GPU must carry to the held-out one, and a GPU that runs slower than its peers must show it."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from rooflens.cli import main
from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import KindEfficiency, Profile
from rooflens.model.pricing.kernel_table import predict_frame
from rooflens.validate.cv import COLUMNS, cross_validate, overall, per_call
from rooflens.validate.datasets import load_kernels
from rooflens.validate.generation import profile_for, reference_gpus

GPUS = ("a100-sxm-80gb", "a40", "h100-sxm")


LAUNCH_CYCLES = 5000.0  # a launch floor that holds on every GPU: cycles of its clock


def norm_rows(gpu: str, memory_fraction: float) -> pd.DataFrame:
    """RMSNorm calls over 4 decades of size, timed as a profile with these terms prices them."""
    rows = np.unique(np.geomspace(1, 65536, 40).astype(int))
    frame = pd.DataFrame({"op": "norm", "rows": rows, "hidden": 4096, "residual": 1,
                          "norm": "rmsnorm", "dtype": "bf16", "impl": "triton:rmsnorm",
                          "gpu": gpu, "source": "synthetic"})  # fmt: skip
    terms = KindEfficiency(memory_fraction=memory_fraction, overhead_cycles=LAUNCH_CYCLES)
    truth = Profile(name="truth", kinds={"norm": terms}, source="test")
    frame["measured_s"] = predict_frame(frame, get_gpu(gpu), truth)["predicted_s"]
    return frame


def test_terms_that_hold_on_every_gpu_carry_to_the_held_out_one():
    table = pd.concat([norm_rows(g, 0.8) for g in GPUS], ignore_index=True)
    cv = cross_validate(table, "pooled", max_evals=400)
    assert list(cv.columns) == list(COLUMNS)
    assert sorted(cv["held_out"]) == sorted(GPUS) and (cv["op"] == "norm").all()
    assert (cv["trained_rows"] == 2 * len(norm_rows(GPUS[0], 0.8))).all()
    assert (cv["median"] < 0.01).all() and (cv["p90"] < 0.02).all(), cv


def test_a_gpu_slower_than_its_peers_shows_as_bias_on_it_alone():
    # the A40 streams at half the fraction of the others: learned from them, its large calls
    # are predicted at 0.4 / 0.8 of their time (error -50 %), and the others stay exact
    table = pd.concat([norm_rows("a100-sxm-80gb", 0.8), norm_rows("h100-sxm", 0.8),
                       norm_rows("a40", 0.4)], ignore_index=True)  # fmt: skip
    cv = cross_validate(table, "pooled", max_evals=400).set_index("held_out")
    big = norm_rows("a40", 0.4)
    floor_s = LAUNCH_CYCLES / float(get_gpu("a40").boost_clock_hz or 0)
    memory_share = 1 - floor_s / big["measured_s"]  # the overhead part is learned exactly
    assert cv.loc["a40", "bias"] == pytest.approx(-0.5 * memory_share.median(), abs=0.03)
    assert cv.loc["a40", "median"] > 0.3
    # the held-out A100 (0.8) learns a fraction between the H100's 0.8 and the A40's 0.4, so
    # it is predicted slower than it runs, by less than the A40's terms would (+100 %)
    assert 0.05 < cv.loc["a100-sxm-80gb", "bias"] < 1.0


def eager_act_rows(gpu: str) -> pd.DataFrame:
    """Eager SiLU-and-mul calls over five decades, timed as kernels that keep 4.3 bytes per
    resident thread per microsecond in flight (A40: 0.55 TB/s, A100: 0.95 TB/s, both below a
    device copy's 0.9 of HBM, as Vidur measured them)."""
    n = np.unique(np.geomspace(1e3, 1e8, 40).astype(int)).astype(float)
    frame = pd.DataFrame({"op": "elementwise", "elements_read": 2 * n, "elements_written": n,
                          "dtype": "fp16", "eager": 1, "impl": "vidur:eager", "gpu": gpu,
                          "source": "synthetic"})  # fmt: skip
    terms = KindEfficiency(memory_fraction=0.9, overhead_cycles=3500.0, bytes_per_thread_us=4.3)
    truth = Profile(name="truth", kinds={"elementwise": terms}, source="test")
    frame["measured_s"] = predict_frame(frame, get_gpu(gpu), truth)["predicted_s"]
    return frame


def test_eager_kernels_learned_on_one_gpu_carry_to_the_other():
    # Each fold learns from one GPU's eager rows, which an HBM fraction (0.78 of the A40's)
    # explains as well as the per-thread roof: taking the HBM fraction predicted the held-out
    # A100 38 % too fast (issue 11's cv table); the per-thread roof carries exactly.
    table = pd.concat([eager_act_rows("a40"), eager_act_rows("a100-sxm-80gb")])
    cv = cross_validate(table, "pooled", max_evals=600)
    assert (cv["median"] < 0.01).all() and (cv["p90"] < 0.02).all(), cv


# Held-out error of the memory classes on the shared measurements (validate/results/cv.csv, the
# eager kernels' per-thread roof, 2026-11-25) plus 1.5 / 2.5 points of headroom, as the in-sample
# budget (validate/accuracy_budget.yaml). Before that roof: A100 43 / 38 / 69 %, A40 norm 31 %.
MEMORY_CV_BUDGET = {
    ("a100-sxm-80gb", "norm"): (0.092, 0.344),
    ("a100-sxm-80gb", "elementwise"): (0.094, 0.277),
    ("a100-sxm-80gb", "embedding"): (0.167, 0.248),
    ("a40", "norm"): (0.049, 0.151),
    ("a40", "elementwise"): (0.074, 0.356),
    ("a40", "embedding"): (0.195, 0.293),
    # 10 fused-RMSNorm calls; since the fits price 600 sampled rows per GPU and implementation
    # (validate/fit_terms.py MAX_ROWS_PER_IMPL) their p90 went 35.6 -> 43.7 % (2026-11-27);
    # with the launch floor in clock cycles, median 8.0 -> 9.2 %, p90 43.7 -> 40.4 % (the
    # other cells gained: A100 elementwise p90 24.8 -> 22.5 %, A40 elementwise 32.6 -> 25.3 %)
    ("h100-sxm", "norm"): (0.107, 0.462),
}


def test_memory_classes_carry_to_the_held_out_gpu(measured_dir):
    table = load_kernels(measured_dir)
    table = table[table["op"].isin(["norm", "elementwise", "embedding"])]
    cv = cross_validate(table, "pooled")
    cv = cv[cv["engine"] == "all"].set_index(["held_out", "op"])
    assert set(cv.index) == set(MEMORY_CV_BUDGET)
    for cell, (median, p90) in MEMORY_CV_BUDGET.items():
        assert cv.loc[cell, "median"] <= median and cv.loc[cell, "p90"] <= p90, (cell, cv.loc[cell])


def test_generation_rule_picks_the_nearest_measured_generation():
    measured = list(GPUS)
    assert reference_gpus(get_gpu("h200"), measured) == ["h100-sxm"]
    assert reference_gpus(get_gpu("b200"), measured) == ["h100-sxm"]  # Blackwell -> Hopper
    assert reference_gpus(get_gpu("l40s"), measured) == ["a100-sxm-80gb", "a40"]  # Ada -> Ampere
    assert reference_gpus(get_gpu("rtx-4090"), ["h100-sxm"]) == ["h100-sxm"]
    assert reference_gpus(get_gpu("v100-sxm-32gb"), measured) == ["a100-sxm-80gb", "a40"]
    assert reference_gpus(get_gpu("mi300x"), measured) == []  # outside the order: pooled


def test_generation_rule_fits_on_the_reference_gpus_only():
    table = pd.concat([norm_rows("a100-sxm-80gb", 0.5), norm_rows("h100-sxm", 0.9)],
                      ignore_index=True)  # fmt: skip
    pooled = Profile(name="calibrated", kinds={}, source="pooled stand-in")
    profile, reference = profile_for(get_gpu("h200"), table, pooled, max_evals=400)
    assert reference == ["h100-sxm"]
    assert profile.kinds["norm"].memory_fraction == pytest.approx(0.9, rel=0.02)
    same, _ = profile_for(get_gpu("h200"), table, pooled, rule="pooled")
    assert same is pooled


def test_sibling_rule_learns_from_the_gpu_of_the_same_sm_design():
    # An H100 at 0.9 of HBM and an A100 at 0.5: an H200 (the H100's SM) learns 0.9 under the
    # sibling rule; an L40S (Ada: no measured sibling) the pooled fit; the folds of two
    # different SMs are scored exactly as pooled.
    table = pd.concat([norm_rows("a100-sxm-80gb", 0.5), norm_rows("h100-sxm", 0.9)],
                      ignore_index=True)  # fmt: skip
    pooled = Profile(name="calibrated", kinds={}, source="pooled stand-in")
    profile, reference = profile_for(get_gpu("h200"), table, pooled, "sibling", max_evals=400)
    assert reference == ["h100-sxm"]
    assert profile.kinds["norm"].memory_fraction == pytest.approx(0.9, rel=0.02)
    same, reference = profile_for(get_gpu("l40s"), table, pooled, "sibling")
    assert same is pooled and reference == ["a100-sxm-80gb", "h100-sxm"]
    three = pd.concat([norm_rows(g, 0.8) for g in GPUS], ignore_index=True)
    sibling = cross_validate(three, "sibling", max_evals=400)
    pooled_cv = cross_validate(three, "pooled", max_evals=400)
    assert (sibling["rule"] == "sibling").all()
    cols = ["held_out", "op", "median", "p90", "bias"]
    pd.testing.assert_frame_equal(sibling[cols], pooled_cv[cols])


def test_overall_leaves_out_cells_without_training_data():
    cv = pd.DataFrame({"op": ["gemm", "norm", "moe", "moe/tuned"], "trained_rows": [5, 5, 0, 0],
                       "median": [0.1, 0.3, 0.9, 0.9], "p90": [0.2, 0.5, 1.0, 1.0]})  # fmt: skip
    assert overall(cv) == {"cells": 2.0, "median_of_medians": pytest.approx(0.2),
                           "worst_median": 0.3, "median_of_p90": pytest.approx(0.35),
                           "worst_p90": 0.5}  # fmt: skip


def test_per_call_pools_every_folds_scored_calls():
    assert per_call([np.array([0.1, -0.3]), np.array([0.2])]) == {
        "rows": 3.0, "median": pytest.approx(0.2), "p90": pytest.approx(0.28)}  # fmt: skip
    calls: list = []
    table = pd.concat([eager_act_rows("a40"), eager_act_rows("a100-sxm-80gb")])
    cv = cross_validate(table, "pooled", max_evals=300, calls=calls, train_own=True)
    every = cv[cv["engine"] == "all"]
    assert len(calls) == 2 and per_call(calls)["rows"] == every["rows"].sum()


def test_cv_cli_writes_csv_and_json(tmp_path, capsys):
    measured = tmp_path / "measured"
    for gpu in ("a100-sxm-80gb", "h100-sxm"):
        folder = measured / f"rooflens-{gpu}" / "triton"
        folder.mkdir(parents=True)
        norm_rows(gpu, 0.7).assign(timing="cuda_graph").to_csv(folder / "rmsnorm.csv", index=False)
    out = tmp_path / "cv.csv"
    args = [
        "validate",
        "cv",
        "--measured",
        str(measured),
        "--max-evals",
        "200",
        "-o",
        str(out),
        "--own-kernels",
    ]  # the synthetic rows sit in the validator's own-runs format
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {c["held_out"] for c in report["cells"]} == {"a100-sxm-80gb", "h100-sxm"}
    assert report["overall"]["worst_median"] < 0.01
    every = [c for c in report["cells"] if c["engine"] == "all"]
    assert report["per_call"]["rows"] == sum(c["rows"] for c in every)
    assert report["per_call"]["p90"] < 0.02
    written = pd.read_csv(out)
    # one cell per held-out GPU over every implementation (no engine ran these rows)
    assert list(written.columns) == list(COLUMNS) and len(written) == 2
    assert set(written["engine"]) == {"all"}
    assert not list(tmp_path.glob(".cv.csv.*"))  # atomic: no temp file left behind
    assert main(args) == 0
    assert "Leave-one-GPU-out" in capsys.readouterr().out


def test_cv_with_one_gpu_is_a_one_line_error(tmp_path, capsys):
    folder = tmp_path / "rooflens-h100-sxm" / "triton"
    folder.mkdir(parents=True)
    norm_rows("h100-sxm", 0.7).assign(timing="cuda_graph").to_csv(folder / "n.csv", index=False)
    assert main(["validate", "cv", "--measured", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: cross-validation needs >= 2 measured GPUs")


def test_fit_from_stored_runs_keeps_the_kernel_rows_only(tmp_path, capsys):
    import yaml

    measured = tmp_path / "measured" / "rooflens-a100-sxm-80gb" / "triton"
    measured.mkdir(parents=True)
    norm_rows("a100-sxm-80gb", 0.7).assign(timing="cuda_graph").to_csv(
        measured / "rmsnorm.csv", index=False
    )
    store = tmp_path / "results" / "h100-sxm"
    store.mkdir(parents=True)
    gemm = pd.DataFrame({"op": "gemm", "m": [16, 64, 256, 1024, 4096], "n": 4096, "k": 4096,
                         "dtype": "bf16", "weight_dtype": "int4", "group_size": 128,
                         "gpu": "h100-sxm", "timing": "cuda_graph"})  # fmt: skip
    ideal = predict_frame(gemm.assign(weight_dtype="bf16"), get_gpu("h100-sxm"))["predicted_s"]
    runs = pd.concat([gemm.assign(impl="torch:mm", measured_s=1.3 * ideal + 4e-6),
                      gemm.assign(impl="triton:w4a16_gemm", measured_s=8 * ideal)])  # fmt: skip
    runs.to_csv(store / "run.csv", index=False)
    out = tmp_path / "profiles"
    args = ["calibrate", "fit", "--measured", str(tmp_path / "measured"),
            "--results", str(tmp_path / "results"), "--out", str(out)]  # fmt: skip
    assert main([*args, "--results-device", "h100-sxm", "--own-kernels"]) == 0
    fit = yaml.safe_load((out / "h100-sxm.yaml").read_text())["provenance"]["fit"]["gemm"]
    # the quantized kernel's rows describe this project's kernel, not the GPU: left out; the
    # baseline's rows are the bf16 GEMM that ran (weight_dtype rewritten by as_run)
    assert fit["rows_by_gpu_impl"] == {"h100-sxm/torch:mm": 5}
    assert fit["median_abs_error"] < 0.05
    capsys.readouterr()
    assert main([*args, "--results-device", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: no results stored for device 'nope'")


def test_opt_in_generation_rule_writes_a_profile_per_unmeasured_preset(tmp_path):
    import yaml

    from rooflens.hardware.presets import gpu_ids
    from rooflens.hardware.profiles import _load

    measured = tmp_path / "measured"
    for gpu, fraction in (("a100-sxm-80gb", 0.5), ("h100-sxm", 0.9)):
        folder = measured / f"rooflens-{gpu}" / "triton"
        folder.mkdir(parents=True)
        norm_rows(gpu, fraction).assign(timing="cuda_graph").to_csv(folder / "n.csv", index=False)
    out = tmp_path / "profiles"
    base = ["calibrate", "fit", "--measured", str(measured), "--out", str(out), "--own-kernels"]
    assert main(base) == 0  # default: pooled only, no file per unmeasured preset
    assert sorted(p.stem for p in out.glob("*.yaml")) == ["a100-sxm-80gb", "generic", "h100-sxm"]
    assert main([*base, "--rule", "generation"]) == 0
    files = {p.stem for p in out.glob("*.yaml")}
    nvidia = {g for g in gpu_ids() if get_gpu(g).vendor == "nvidia"}
    assert files == nvidia | {"generic"}  # every NVIDIA preset; MI300X keeps generic.yaml

    def norm_fraction(gpu_id: str) -> float:
        return _load(out / f"{gpu_id}.yaml").kinds["norm"].memory_fraction

    # Hopper and Blackwell learn from the H100 alone, Ada and Ampere from the A100
    assert norm_fraction("h200") == pytest.approx(0.9, rel=0.02)
    assert norm_fraction("b200") == pytest.approx(0.9, rel=0.02)
    assert norm_fraction("l40s") == pytest.approx(0.5, rel=0.02)
    # pooled: anywhere between the two (the mean |log error| of two GPUs is flat in between)
    assert 0.49 < _load(out / "generic.yaml").kinds["norm"].memory_fraction < 0.91
    text = yaml.safe_load((out / "b200.yaml").read_text())["source"]
    assert text.startswith("generation rule (blackwell -> h100-sxm)")


def test_cv_folds_are_the_profiles_that_priced_each_held_out_gpu(tmp_path, capsys):
    # the H100 streams at 0.5 where the A100 does 0.7: held out, it is priced with the A100's
    # terms; the fold file written must price its rows to the very error the table reports
    from rooflens.hardware.profiles import load_calibration

    measured = tmp_path / "measured"
    for gpu, fraction in (("a100-sxm-80gb", 0.7), ("h100-sxm", 0.5)):
        folder = measured / f"rooflens-{gpu}" / "triton"
        folder.mkdir(parents=True)
        rows = norm_rows(gpu, fraction).assign(timing="cuda_graph")
        rows.to_csv(folder / "rmsnorm.csv", index=False)
    folds = tmp_path / "folds"
    args = ["validate", "cv", "--measured", str(measured), "--max-evals", "200",
            "--own-kernels", "--folds", str(folds), "--json"]  # fmt: skip
    assert main(args) == 0
    cells = pd.DataFrame(json.loads(capsys.readouterr().out)["cells"]).set_index("held_out")
    assert sorted(p.name for p in folds.glob("*.yaml")) == ["a100-sxm-80gb.yaml", "h100-sxm.yaml"]
    assert "rooflens validate cv" in (folds / "h100-sxm.yaml").read_text().splitlines()[0]
    for gpu, fraction in (("a100-sxm-80gb", 0.7), ("h100-sxm", 0.5)):
        rows = norm_rows(gpu, fraction)
        fold = load_calibration(folds / f"{gpu}.yaml")
        error = predict_frame(rows, get_gpu(gpu), fold)["predicted_s"] / rows["measured_s"] - 1
        assert float(error.abs().median()) == pytest.approx(cells.loc[gpu, "median"], rel=1e-6)
        assert float(error.median()) == pytest.approx(cells.loc[gpu, "bias"], rel=1e-6)
    assert cells.loc["h100-sxm", "bias"] < -0.2  # it learned 0.7 for its 0.5: priced too fast


def test_the_committed_folds_are_the_committed_tables_folds():
    # validate/results/cv_folds/ holds the profile each held-out GPU of cv.csv was priced with
    # (benchmarks/engine_steps.py --held-out): one per held-out GPU, fitted on its training GPUs
    from rooflens.hardware.profiles import load_calibration
    from rooflens.validate.cv import CV_FILE, CV_FOLDS_DIR

    cells = pd.read_csv(CV_FILE)
    trained = cells.groupby("held_out")["trained_on"].first()
    assert sorted(p.stem for p in CV_FOLDS_DIR.glob("*.yaml")) == sorted(trained.index)
    for gpu, on in trained.items():
        fold = load_calibration(CV_FOLDS_DIR / f"{gpu}.yaml")
        assert sorted(fold.provenance["gpus"]) == sorted(on.split(",")), gpu
        assert gpu not in fold.provenance["gpus"]
