"""A step's GEMMs, attention and all-reduces read off the engines' measured tables
(validate/engine_steps.py): the interpolation is exact on power laws and at grid points, never
extrapolates, and a real step's rows are the tables' calls at the operator table's shapes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rooflens.api import predict
from rooflens.validate.aiconfigurator import load_aiconfigurator_gemm
from rooflens.validate.engine_steps import (
    LogGrid,
    allreduce_s,
    attention_table,
    gemm_table,
    step_rows,
    summarize,
)


def _power_law(m, n, k):
    return 3e-9 * m**0.7 * n**0.9 * k**1.1


def _grid(drop: tuple[float, float, float] | None = None) -> pd.DataFrame:
    axes = [np.array([1, 4, 16, 64.0]), np.array([256, 1024, 4096.0]), np.array([512, 2048.0])]
    rows = [(m, n, k) for m in axes[0] for n in axes[1] for k in axes[2] if (m, n, k) != drop]
    frame = pd.DataFrame(rows, columns=["m", "n", "k"])
    return frame.assign(measured_s=_power_law(frame.m, frame.n, frame.k), impl="x-1:y")


def test_trilinear_in_log_space_is_exact_on_a_power_law():
    table = LogGrid.of(_grid(), ("m", "n", "k"))
    for m, n, k in [(1, 256, 512), (64, 4096, 2048), (7, 300, 1000), (33.3, 2000, 700)]:
        assert table.at(m, n, k) == pytest.approx(_power_law(m, n, k), rel=1e-9)


def test_outside_the_grid_or_next_to_a_hole_is_not_guessed():
    table = LogGrid.of(_grid(drop=(16, 1024, 2048)), ("m", "n", "k"))
    assert np.isnan(table.at(128, 1024, 512))  # past the largest m
    assert np.isnan(table.at(8, 1024, 100))  # below the smallest k
    assert np.isnan(table.at(8, 2000, 1024))  # a corner of its cell is missing
    assert table.at(2, 2000, 1024) == pytest.approx(_power_law(2, 2000, 1024), rel=1e-9)


def test_a_call_is_never_read_across_its_harness_l2_cliff():
    # n <= 1024 ran with its operand in L2, n = 4096 cold: between them the table says nothing
    frame = _grid().assign(warm=lambda f: f.n <= 1024)
    table = LogGrid.of(frame, ("m", "n", "k"), resident="warm")
    assert table.at(8, 500, 1024, resident=True) == pytest.approx(_power_law(8, 500, 1024))
    assert np.isnan(table.at(8, 500, 1024, resident=False))  # a cold call off warm rows
    assert np.isnan(table.at(8, 2000, 1024, resident=True))  # a corner of each kind
    assert np.isnan(table.at(8, 2000, 1024, resident=False))
    assert table.at(8, 4096, 2048, resident=False) == pytest.approx(_power_law(8, 4096, 2048))
    # no residency asked: the plain interpolation
    assert table.at(8, 2000, 1024) == pytest.approx(_power_law(8, 2000, 1024), rel=1e-9)


def test_the_rtx_trtllm_fp8_table_is_not_read_across_its_cliff(measured_dir):
    # 16,384 x 8,192 FP8 (134 MB, one copy) ran resident in the 128 MB-class L2, 51,200 x 8,192
    # cold; Llama-3-70B's TP-2 up_gate (28,672 x 8,192, 235 MB) is cold however it is replayed
    root = str(measured_dir)
    table = gemm_table("rtx-pro-6000", "trtllm", "fp8", root)
    assert table is not None and table.resident is not None
    assert np.isfinite(table.at(1, 28672, 8192))  # what the plain interpolation would claim
    assert np.isnan(table.at(1, 28672, 8192, resident=False))
    pred = predict("llama-3-70b", "rtx-pro-6000", batch=1, prompt_len=2048, tp=2,
                   engine="trtllm", quant="w8a8-fp8")  # fmt: skip
    rows = step_rows(pred, root)
    up = rows[rows.phase.eq("decode") & rows.name.eq("mlp.up_gate")].iloc[0]
    assert np.isnan(up.tables_s) and np.isfinite(up.ours_s)


def test_a_grid_point_reads_the_engines_own_row(measured_dir):
    rows = load_aiconfigurator_gemm(measured_dir)
    h100 = rows[rows.gpu.astype(str).eq("h100-sxm") & rows.impl.astype(str).str.startswith("vllm")
                & rows.quant.astype(str).eq("fp8")]  # fmt: skip
    table = gemm_table("h100-sxm", "vllm", "fp8", str(measured_dir))
    assert table is not None and table.impl.startswith("vllm-")
    for m, n, k in [(1, 4096, 4096), (64, 16384, 4096), (4096, 8192, 8192)]:
        row = h100[(h100.m == m) & (h100.n == n) & (h100.k == k)]
        assert table.at(m, n, k) == pytest.approx(float(row.measured_s.median()), rel=1e-9)


def test_a_tp2_step_reads_each_gemm_and_all_reduce_off_the_tables(measured_dir):
    root = str(measured_dir)
    pred = predict("llama-3-8b", "h100-sxm", batch=8, prompt_len=2048, tp=2, engine="vllm")
    rows = step_rows(pred, root)
    decode = rows[rows.phase.eq("decode")]
    qkv = decode[decode.name.eq("attn.qkv_proj")].iloc[0]
    table = gemm_table("h100-sxm", "vllm", "bfloat16", root)
    assert table is not None
    assert qkv.tables_s == pytest.approx(table.at(8, 3072, 4096) * qkv["count"], rel=1e-12)
    ar = decode[decode.quant.eq("all_reduce")]
    assert len(ar) == 2 and ar.tables_s.notna().all()  # 8 x 4096 x 2 bytes: the engine's kernel
    assert ar.tables_s.iloc[0] == pytest.approx(
        allreduce_s("h100-sxm", "vllm", 2, 65536.0, root) * ar["count"].iloc[0], rel=1e-12
    )
    core = decode[decode.name.eq("attn.core")].iloc[0]  # 16 of 32 heads, 4 of 8 KV heads a GPU
    key = (16, 4, 128, "bf16", "bf16")
    attention = attention_table("h100-sxm", "vllm", "attention_decode", key, root)
    assert attention is not None and attention.impl.startswith("vllm-")
    assert core.tables_s == pytest.approx(attention.at(8, 2048 + 64) * core["count"], rel=1e-12)
    s = summarize(decode)
    # in sample (the calibration was fitted on these tables): the step's sums agree closely
    assert 0.85 < s["gemm_ours_s"] / s["gemm_tables_s"] < 1.15
    assert 0.75 < s["all_reduce_ours_s"] / s["all_reduce_tables_s"] < 1.25
    assert 0.75 < s["attention_ours_s"] / s["attention_tables_s"] < 1.33


def test_a_precision_the_engine_did_not_measure_compares_nothing(measured_dir):
    # W8A16 on the A100: TensorRT-LLM measured int8 weight-only there, vLLM (the default) did not
    pred = predict("llama-3-8b", "a100-sxm-80gb", batch=8, prompt_len=2048, quant="w8a16")
    s = summarize(step_rows(pred, str(measured_dir)))
    assert np.isnan(s["gemm_ours_s"]) and s["left_out"] > 0


def test_weight_only_fp8_reads_no_w8a8_table(measured_dir):
    # fp8 weights over bf16 activations (FP8 Marlin) no table measures: its GEMMs compare nothing
    pred = predict("llama-3-8b", "h100-sxm", batch=8, prompt_len=2048, weight_dtype="fp8",
                   act_dtype="bf16")  # fmt: skip
    rows = step_rows(pred, str(measured_dir))
    gemms = rows[rows.quant.ne("attention") & rows.quant.ne("all_reduce")]
    assert gemms[gemms.name.ne("lm_head")].tables_s.isna().all()
    assert np.isnan(summarize(rows)["gemm_ours_s"])


def test_a_small_decodes_cache_is_warm_in_the_table_and_cold_in_a_step(measured_dir):
    # Llama-3-8B at batch 1 on the B300: 2,112 cached tokens x 4 kB a layer is 8.7 MB, inside
    # its 126 MB L2, so the table's harness (one cache, replayed) read it warm; priced as replayed
    # the attention sums agree with the table, cold (a serving step) they cost more. The GEMMs'
    # six weight copies (50 MB of qkv weights each) do not fit: warm and cold agree
    rows = step_rows(predict("llama-3-8b", "b300", batch=1, prompt_len=2048, engine="vllm"),
                     str(measured_dir))  # fmt: skip
    decode = rows[rows.phase.eq("decode")]
    core = decode[decode.name.eq("attn.core")].iloc[0]
    assert core.warm_s < 0.95 * core.ours_s
    s = summarize(decode)
    assert 0.9 < s["attention_warm_s"] / s["attention_tables_s"] < 1.1
    assert s["attention_ours_s"] > 1.1 * s["attention_tables_s"]
    qkv = decode[decode.name.eq("attn.qkv_proj")].iloc[0]
    assert qkv.warm_s == pytest.approx(qkv.ours_s, rel=1e-12)


def test_a_step_priced_with_a_given_profile_is_the_step_of_the_profile_named(measured_dir):
    # a fold's terms come in as an object (benchmarks/engine_steps.py --held-out); passing the
    # ideal profile that way must price every row, cold and as the harness ran it, exactly as
    # the scenario that names `ideal`, and differently from the calibrated one it stands in for
    from rooflens.hardware.profiles import IDEAL
    from rooflens.model.predict.api import make_scenario, run

    root = str(measured_dir)
    kw = {"batch": 8, "prompt_len": 2048, "output_len": 16, "tp": 2, "engine": "vllm"}
    named = step_rows(run(make_scenario("llama-3-8b", "h100-sxm", profile="ideal", **kw)), root)
    calibrated = make_scenario("llama-3-8b", "h100-sxm", profile="calibrated", **kw)
    given = step_rows(run(calibrated, profile=IDEAL), root, profile=IDEAL)
    pd.testing.assert_frame_equal(given, named)
    assert not np.allclose(step_rows(run(calibrated), root)["ours_s"], named["ours_s"])


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(repo / "src"), str(repo)))}
    return subprocess.run([sys.executable, "-m", "benchmarks.engine_steps", *args], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=600)  # fmt: skip


def test_the_held_out_benchmark_prices_each_gpu_with_its_fold_file(measured_dir, tmp_path):
    # a "fold" that is the H100's own calibration file must give the in-sample figures exactly;
    # a GPU without a fold file is a one-line error naming the command that writes it
    from rooflens.hardware.profiles import CALIBRATION_DIR

    shutil.copy(CALIBRATION_DIR / "h100-sxm.yaml", tmp_path / "h100-sxm.yaml")
    base = ("--gpu", "h100-sxm", "--engine", "trtllm", "--model", "llama-3-8b", "--show", "1")
    in_sample, held = _bench(*base), _bench(*base, "--held-out", str(tmp_path))
    assert in_sample.returncode == held.returncode == 0, held.stderr

    def whole(out: str) -> str:
        return next(line for line in out.splitlines() if line.startswith("whole steps over"))

    assert whole(held.stdout) == whole(in_sample.stdout)
    assert held.stdout.startswith("held out: each GPU priced by the fold")
    missing = _bench("--gpu", "b300", "--held-out", str(tmp_path))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "no fold profile for b300" in missing.stderr and "validate cv --folds" in missing.stderr
