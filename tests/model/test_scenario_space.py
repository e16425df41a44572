"""The whole scenario space holds (issue 23 §4): hypothesis draws presets × GPUs × TP/PP/EP ×
batch 1–1024 × prompt 1–128k × precisions × common optimizations, and every draw must predict
with finite numbers, never get faster with more batch or context, keep the KV cache linear in
the batch and weights ∝ 1/TP, price int4 and fp8 decode at batch ≤ 16 no dearer than bf16 under
`ideal` (and under `calibrated` only where the prediction names the measured table that says so),
and price no op under `calibrated` at more than 20× its ideal time while it holds more than 10 % of
its step (rooflens.validate.scenario_space holds the checks). A few draws go through
the CLI itself: exit 0 or 3 (does not fit), and finite JSON."""

from __future__ import annotations

import contextlib
import io
import json
import math
import random
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rooflens.cli import main
from rooflens.hardware.presets import gpu_ids
from rooflens.model.analysis import quant_vs_bf16
from rooflens.model.specs.presets import get_model, model_ids
from rooflens.validate.scenario_draws import (
    OPTS,
    PRECISIONS,
    WIDE_MAX_BATCH,
    WIDE_MAX_PROMPT,
    WIDE_OUTPUT,
    WIDE_PPS,
    WIDE_TPS,
    valid,
    wide,
)
from rooflens.validate.scenario_space import check

pytestmark = pytest.mark.slow  # ~30 s in all: a hypothesis run of whole predictions


@st.composite
def scenarios(draw: st.DrawFn) -> dict:
    model = draw(st.sampled_from(model_ids()))
    spec = get_model(model)
    tp = draw(st.sampled_from([t for t in WIDE_TPS if spec.n_heads % t == 0]))
    pp = draw(st.sampled_from([p for p in WIDE_PPS if spec.n_layers % p == 0]))
    ep = draw(st.sampled_from([1, tp] if spec.n_experts else [1]))
    output_len = draw(st.integers(*WIDE_OUTPUT))
    longest = min(WIDE_MAX_PROMPT, (spec.max_context - output_len) // 2)  # the check doubles it
    precision = draw(st.sampled_from(PRECISIONS))
    settings_ = {
        "model": model, "gpu": draw(st.sampled_from(gpu_ids())), "tp": tp, "pp": pp, "ep": ep,
        "batch": draw(st.integers(1, WIDE_MAX_BATCH)), "prompt_len": draw(st.integers(1, longest)),
        "output_len": output_len, "opts": draw(st.sampled_from(OPTS)), **precision,
    }  # fmt: skip
    return settings_


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_the_scenario_space_holds(s):
    assume(valid(s))
    report = check(s, quant_profiles=("ideal",))
    assert not report.refused, (s, report.refused)
    assert not report.crash, (s, report.crash)
    assert not report.physics, (s, report.physics)
    assert not [q for q in report.quant if q.startswith("calibrated")], (s, report.quant)
    assert not report.ratio, (s, report.ratio)


def _finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_the_cli_answers_exit_0_or_3_with_finite_json(s):
    assume(valid(s))
    argv = ["predict", "--model", s["model"], "--gpu", s["gpu"], "--json"]
    for key in ("batch", "prompt_len", "output_len", "tp", "pp", "ep", "weight_dtype",
                "act_dtype"):  # fmt: skip
        if key in s:
            argv += [f"--{key.replace('_', '-')}", str(s[key])]
    for opt in s["opts"]:
        argv += ["--opt", opt]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code in (0, 3), (argv, err.getvalue())
    if code == 0:
        assert _finite(json.loads(out.getvalue()))
    else:
        assert re.search(r"[GT]B over", err.getvalue())  # says by how much it does not fit


# The examples, each a broken law before its fix.
def test_weight_only_fp8_decode_never_gets_faster_with_batch():
    # llama-3-70b, h100-sxm, fp8 weights, calibrated: 126 ms at batch 1, 35.6 ms at batch 8
    times = [
        check({"model": "llama-3-70b", "gpu": "h100-sxm", "batch": b, "prompt_len": 512,
               "output_len": 16, "weight_dtype": "fp8", "act_dtype": "bf16", "opts": ()})
        for b in (1, 4, 8)
    ]  # fmt: skip
    for report in times:
        assert not report.physics and not report.quant, report


def test_the_moe_router_costs_near_its_ideal_time():
    # found by benchmarks/scenario_space.py: gpt-oss-20b at TP 8, int4 weights, batch 5, priced
    # its N = 32 router on the int4 weight-only terms (a ~9 µs floor, TensorRT-LLM 1.0 on the
    # A100): 87× its ideal time above the launch floor, 10 % of a decode step. Engines keep the
    # router 16-bit (model/ops/ffn_block.py); with or without eager launch it is a small GEMM.
    for opts in ((), ("eager-launch",)):
        report = check({"model": "gpt-oss-20b", "gpu": "h100-sxm", "tp": 8, "batch": 5,
                        "prompt_len": 774, "output_len": 128, "opts": opts,
                        "weight_dtype": "int4", "act_dtype": "bf16"})  # fmt: skip
        assert not report.ratio and not report.physics and not report.crash, report


def test_mla_absorbed_projections_cost_near_their_ideal_time_under_weight_only():
    # found by benchmarks/scenario_space.py (seed 6) once the draws named schemes: W8A16
    # DeepSeek-V3 on a B200 priced attn.q_absorb on the pooled int8 weight-only terms (a 12.5 µs
    # wave) at 50× its ideal time, 12 % of a decode step. Engines run the absorbed projections as
    # a 16-bit bmm (model/ops/rows.py per_head_gemm)
    report = check({"model": "deepseek-v3", "gpu": "b200", "tp": 1, "batch": 3,
                    "prompt_len": 6583, "output_len": 128, "opts": ("eager-launch",),
                    "quant": "w8a16"})  # fmt: skip
    assert not report.ratio and not report.physics and not report.crash, report


def test_the_draws_name_schemes_the_dtypes_do_not_say():
    # FP8-block, int8 weight-only and SmoothQuant are priced by kernel families of their own
    # (model/specs/quant.py); the space draws them by name beside the dtype pairs
    assert {p.get("quant") for p in PRECISIONS} >= {"fp8-block", "w8a16", "smoothquant"}
    fp8_block = check({**B300_FP8, "gpu": "h100-sxm", "engine": "sglang", "batch": 4,
                       "weight_dtype": None, "act_dtype": None, "quant": "fp8-block"},
                      quant_profiles=("ideal",))  # fmt: skip
    assert not fp8_block.crash and not fp8_block.physics and not fp8_block.refused, fp8_block


B300_FP8 = {"model": "llama-3-8b", "gpu": "b300", "engine": "trtllm", "batch": 1,
            "prompt_len": 512, "output_len": 16, "weight_dtype": "fp8", "act_dtype": "fp8",
            "opts": ()}  # fmt: skip


def test_a_slower_quantized_decode_passes_only_with_a_named_table(monkeypatch):
    # TensorRT-LLM's fp8 GEMMs on the B300 are measured slower than bf16 at M = 1: recorded,
    # with the table, and no violation even where calibrated is strict
    report = check(B300_FP8, quant_profiles=("ideal", "calibrated"))
    assert not report.physics and not report.quant, report
    (line,) = report.quant_named
    assert "aiconfigurator-b300/gemm/trtllm/1.3.0rc20/gemm_perf.parquet" in line
    # the same step with no table behind it is a finding (a violation where strict)
    monkeypatch.setattr(quant_vs_bf16, "fitted_on", lambda *_: [])
    report = check(B300_FP8, quant_profiles=("ideal", "calibrated"))
    assert not report.quant_named and len(report.physics) == 1, report
    assert "no measured table named" in report.physics[0]
    assert check(B300_FP8).quant == report.physics  # recorded only, where not strict


def test_short_context_attention_over_many_sequences_is_its_measured_waves():
    # found by a wide draw: gemma-3-4b on an H100 NVL, batch 805, prompt 5 tokens: decode
    # attention at 43x its ideal time, 18 % of the step. Its price is the grid's waves (805 x 8
    # programs over 132 SMs), as the engines' tables measure such calls: recorded, named.
    report = check({"model": "gemma-3-4b", "gpu": "h100-nvl", "batch": 805, "prompt_len": 5,
                    "output_len": 12, "opts": ()})  # fmt: skip
    assert not report.ratio and not report.physics, report
    (line,) = report.ratio_measured
    assert line.startswith("decode.attn.core:")
    assert "aiconfigurator-h100/attention/*/*/generation_attention_perf.parquet" in line


def test_engines_measure_short_context_attention_far_above_its_ideal_time():
    # the evidence for `ratio_measured`: the H100's engine decode-attention calls over ≤ 32
    # cached tokens and many sequences run at many times the ideal roofline, and `calibrated`
    # prices them no higher than measured
    from rooflens.validate.aiconfigurator import load_aiconfigurator_attention
    from rooflens.validate.compare import join

    rows = load_aiconfigurator_attention()
    rows = rows[(rows.gpu == "h100-sxm") & (rows.op == "attention_decode")]
    rows = rows[(rows.kv_len <= 32) & (rows.batch * rows.n_heads > 3000)]
    rows = rows[rows.kv_dtype == "bf16"].sample(400, random_state=0).reset_index(drop=True)
    joined = join(rows, ("ideal", "calibrated"))
    assert (joined.measured_s / joined.predicted_ideal_s).median() > 8
    assert (joined.predicted_calibrated_s / joined.measured_s).median() < 1.0


def test_a_narrow_fp8_gemm_over_millions_of_rows_is_its_measured_serialized_amax():
    # found by a wide draw: gemma-3-1b, W8A8-FP8 under vLLM on a GB200 at TP 2, a prefill of
    # 564 x 14,829 tokens: o_proj (k = 512) at 31x its ideal time, 12 % of the step. vLLM's
    # per-tensor amax takes one atomic per row, serialized: recorded with the tables, named
    report = check({"model": "gemma-3-1b", "gpu": "gb200", "tp": 2, "batch": 564,
                    "prompt_len": 14829, "output_len": 41, "opts": ("eager-launch",),
                    "weight_dtype": "fp8", "act_dtype": "fp8"})  # fmt: skip
    assert not report.ratio and not report.physics, report
    (line,) = report.ratio_measured
    assert line.startswith("prefill.attn.o_proj:") and "serialized rows" in line
    assert "aiconfigurator-b300/gemm/vllm/*/gemm_perf.parquet" in line


def test_engines_measure_vllms_serialized_amax_far_above_the_ideal_time():
    # the evidence: vLLM's narrow FP8 GEMMs (n, k <= 512) at m >= 4,096 on the H100 and B300 run
    # at tens of times their ideal time, growing with m alone, and `calibrated` prices them
    # within a fifth of measured at the median
    from rooflens.validate.aiconfigurator import load_aiconfigurator_gemm
    from rooflens.validate.compare import join

    rows = load_aiconfigurator_gemm()
    rows = rows[rows.gpu.isin(["h100-sxm", "b300"]) & rows.impl.str.startswith("vllm")]
    rows = rows[(rows.quant == "fp8") & (rows.m >= 4096) & (rows.n <= 512) & (rows.k <= 512)]
    joined = join(rows.reset_index(drop=True), ("ideal", "calibrated"))
    assert (joined.measured_s / joined.predicted_ideal_s).median() > 20
    assert abs((joined.predicted_calibrated_s / joined.measured_s).median() - 1.0) < 0.2
    # SGLang's kernel (no per-row atomics) runs the same shapes several times faster
    sglang = load_aiconfigurator_gemm()
    sglang = sglang[sglang.gpu.isin(["h100-sxm", "b300"]) & sglang.impl.str.startswith("sglang")]
    sglang = sglang[(sglang.quant == "fp8") & (sglang.m >= 4096) & (sglang.n <= 512)
                    & (sglang.k <= 512)]  # fmt: skip
    assert sglang.measured_s.median() * 2 < rows.measured_s.median()


def test_per_head_qk_norms_cost_near_their_ideal_time():
    # qwen3-8b on h200, batch 8, prompt 2000: attn.qk_norm took 255 ms of a 610 ms TTFT under
    # calibrated, against 2.5 ms under ideal
    report = check({"model": "qwen3-8b", "gpu": "h200", "batch": 8, "prompt_len": 2000,
                    "output_len": 16, "opts": ()})  # fmt: skip
    assert not report.ratio and not report.physics, report


def test_fit_advice_skips_changes_the_pipeline_refuses() -> None:
    # found by the CLI draw: DeepSeek-V3 at TP 2 × EP 2 on an A10 does not fit; trying TP 4
    # with EP 2 is refused (EP must be a multiple of TP), which is no fix, not an error (exit 2).
    # The advice widens EP with TP, and what it names must itself fit (exit 0 when followed).
    # (On the A10 itself nothing up to TP 16 fits since the routers stay 16-bit, +0.16 GB a
    # GPU: the advice there is --pp. The A100-40GB takes the same TP × EP × W4A16 path.)
    argv = ["predict", "--model", "deepseek-v3", "--gpu", "a100-sxm-40gb", "--tp", "2",
            "--ep", "2"]  # fmt: skip
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        assert main(argv) == 3
    line = err.getvalue()
    assert "GB over" in line and "; try " in line, line
    advised = line.split("; try ")[1].split(" (")[0].split(", or ")[0].split()
    followed = [*argv[:5], *advised]  # the advised flags replace --tp/--ep
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main([*followed, "--output-len", "2"]) == 0, followed


def test_a_gpu_without_a_cited_tdp_still_predicts() -> None:
    # found by the CLI draw: gh200 (module power configurable, no tdp_watts) made every
    # `predict` exit 2; it predicts, with no energy figures
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["predict", "--model", "llama-3-8b", "--gpu", "gh200", "--json"]) == 0
    result = json.loads(out.getvalue())
    assert result["energy"] is None and result["tpot_s"] > 0


def test_the_wide_draws_span_the_property_space_and_valid_matches_the_schema() -> None:
    # the benchmark's `--space wide` (validate/scenario_draws.py) draws what the strategy above
    # draws, within the same bounds, and `valid` is the schema's verdict, not a guess
    rng = random.Random(5)
    draws = [wide(rng) for _ in range(300)]
    assert {d["gpu"] for d in draws} > {"a100-sxm-80gb", "h100-sxm"}
    for d in draws:
        spec = get_model(d["model"])
        assert d["tp"] in WIDE_TPS and spec.n_heads % d["tp"] == 0
        assert d["pp"] in WIDE_PPS and 1 <= d["batch"] <= WIDE_MAX_BATCH
        assert 1 <= d["prompt_len"] <= max(1, min(WIDE_MAX_PROMPT, spec.max_context))
    refused = [d for d in draws if not valid(d)]
    assert 0 < len(refused) < len(draws)
    w8a8 = {"model": "llama-3-8b", "gpu": "h100-sxm", "tp": 1, "pp": 1, "ep": 1, "batch": 1,
            "prompt_len": 128, "output_len": 16, "opts": (), "weight_dtype": "fp8",
            "act_dtype": "fp8"}  # fmt: skip
    assert valid(w8a8) and not valid({**w8a8, "gpu": "a100-sxm-80gb"})  # no FP8 units there


B200_VLLM_FP8_B1 = {"model": "qwen3-30b-a3b", "gpu": "b200", "tp": 4, "batch": 1,
                    "prompt_len": 253, "output_len": 128, "weight_dtype": "fp8",
                    "act_dtype": "fp8", "opts": ()}  # fmt: skip


def test_a_batch_1_step_over_vllms_measured_m1_path_may_cost_more_than_batch_2(monkeypatch):
    # found by the realistic sample (seed 23) once vLLM's B300 FP8 GEMMs priced their m = 1
    # path (+13.3 us a one-row call, the B200 taking the B300's terms): TPOT 6.74 ms at batch 1,
    # 5.53 ms at batch 2. Recorded with the tables, not a violation; its GEMMs far above ideal
    # are that path too
    from rooflens.validate import scenario_space

    report = check(B200_VLLM_FP8_B1)
    assert not report.physics and not report.ratio, report
    (line,) = report.physics_measured
    assert line.startswith("TPOT at 2× batch:") and "m = 1 path" in line
    assert "aiconfigurator-b300/gemm/vllm/*/gemm_perf.parquet" in line
    assert report.ratio_measured and all("its m = 1 path" in x for x in report.ratio_measured)
    # the allowance is the path's own seconds, no more: without it the drop is a violation
    monkeypatch.setattr(scenario_space, "_one_row_s", lambda *_: 0.0)
    report = check(B200_VLLM_FP8_B1)
    assert not report.physics_measured and len(report.physics) == 1, report
    assert report.physics[0].startswith("TPOT at 2× batch:")
