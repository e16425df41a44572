"""One pricing path (model/pricing/reprice.py): every row of the operator table carries the kernel
call it stands for (`Op.call`, in the columns of `rooflens kernels predict`), and re-pricing
that call through kernels predict's path gives the row's own seconds — for dense GQA, MoE (TP
and EP), MLA, weight-only int4, sliding-window and TP models, at prefill, chunked prefill,
decode and verification steps, under both profiles."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from rooflens.cli.predict import with_call_exact
from rooflens.hardware.presets import get_gpu
from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.steps import Step
from rooflens.model.pricing.kernel_table import predict_frame, predict_kernels

SCENARIOS = {
    "dense-gqa": ("llama-3-8b", "a100-sxm-80gb", {"batch": 4}),
    "moe-tp": ("mixtral-8x7b", "h100-sxm", {"tp": 2, "batch": 16}),
    "moe-ep": ("mixtral-8x7b", "h100-sxm", {"tp": 2, "ep": 4, "batch": 8}),
    "mla": ("deepseek-v3", "h200", {"tp": 8, "weight_dtype": "fp8", "batch": 2}),
    "w4a16": ("llama-3-8b", "l40s", {"weight_dtype": "int4", "kv_dtype": "fp8", "batch": 32}),
    "tp4": ("llama-2-70b", "h100-sxm", {"tp": 4, "batch": 8}),
    "window": ("mistral-7b", "a40", {"act_dtype": "fp16", "weight_dtype": "int8"}),
}
STEPS = {
    "prefill": lambda B: Step("prefill", B, 512.0, 512.0),
    "chunk": lambda B: Step("prefill", B, 256.0, 768.0),
    "decode": lambda B: Step("decode", B, 1.0, 1031.0, 1.0),
    "verify": lambda B: Step("decode", B, 4.0, 5000.0, 4.0),
}


@pytest.mark.parametrize("profile", ["ideal", "calibrated"])
@pytest.mark.parametrize("step", list(STEPS))
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_row_reprices_from_its_call(name, step, profile):
    model, gpu, settings = SCENARIOS[name]
    sc = make_scenario(model, gpu, profile=profile, prompt_len=1024, **settings)
    priced = make_pipeline(sc).price_step(STEPS[step](float(sc.workload.batch)))
    assert all(p.op.call for p in priced), [p.op.name for p in priced if not p.op.call]
    calls = pd.DataFrame([p.op.call for p in priced])  # one table: grouped as a validator would
    out = predict_frame(calls, sc.gpu, profile, system=sc.system)
    for p, seconds, flops in zip(priced, out["predicted_s"], out["flops"], strict=True):
        assert seconds * p.op.count == pytest.approx(float(p.total_s), rel=1e-9, abs=0), p.op.name
        assert flops == pytest.approx(float(p.op.flops), rel=1e-12, abs=0), p.op.name


@pytest.mark.parametrize("profile", ["ideal", "calibrated"])
def test_predict_json_rows_reprice_through_the_kernels_predict_csv(profile):
    # The `ops` of `rooflens predict --json`, written as a kernels-predict CSV and read back:
    # predicted_s × count is each row's time_s (one decode step: output_len 2).
    sc = make_scenario("mixtral-8x7b", "h100-sxm", tp=2, batch=8, prompt_len=300, output_len=2,
                       weight_dtype="int4", profile=profile)  # fmt: skip
    ops = pd.DataFrame(run(sc).to_dict()["ops"])
    kernel_columns = ops.drop(columns=["name", "phase", "count", "flops", "bytes", "intensity",
                                       "time_s", "bound"])  # fmt: skip
    csv = io.StringIO(kernel_columns.to_csv(index=False))
    comm = kernel_columns["op"].eq("comm")
    out = predict_frame(pd.read_csv(csv), sc.gpu, profile, system=sc.system)
    np.testing.assert_allclose(out["predicted_s"] * ops["count"], ops["time_s"], rtol=1e-9)
    assert comm.any() and (out.loc[comm, "bound"] == "comm").all()


def test_the_issue_example_has_one_price():
    # Issue 11: decode attention, batch 1, KV 1024, 32/8 heads, head_dim 128, bf16, calibrated
    # A100-SXM-80GB, cost 20.2 µs in kernels predict and 15.7 µs in the operator table. Now the
    # two are one number: the table's attn.core of llama-3-8b (32 layers) is 32 such calls.
    gpu = get_gpu("a100-sxm-80gb")
    # kv_write = 1: the serving engine's own KV-cache write kernel is part of the call
    call = {"op": "attention_decode", "batch": 1, "kv_len": 1024, "n_heads": 32,
            "n_kv_heads": 8, "head_dim": 128, "dtype": "bf16", "kv_dtype": "bf16",
            "kv_write": 1}  # fmt: skip
    kernel_s = float(predict_kernels(pd.DataFrame([call]), gpu, "calibrated")["predicted_s"][0])
    sc = make_scenario("llama-3-8b", gpu.id, prompt_len=1023, output_len=2, profile="calibrated")
    ops = run(sc).to_dict()["ops"]
    (core,) = [o for o in ops if o["name"] == "attn.core" and o["phase"] == "decode"]
    assert {k: core[k] for k in call} == call  # the row states the very call
    assert core["time_s"] == pytest.approx(32 * kernel_s, rel=1e-12)
    assert 5e-6 < kernel_s < 25e-6  # a few µs: launch floor plus 4.2 MB at ~1.5 TB/s


def test_mla_decode_launches_the_flash_decoding_grid():
    # Golden change (deepseek-v3/h200/tp8/ideal): MLA attention was the one attention op
    # without a grid of its own. It now launches model/ops/attention.py's: at batch 1 the latent's
    # one program per sequence splits into L / 128 programs (FlashMLA splits the KV too), which
    # reach N / SMs of HBM bandwidth for the latent stream; the rest moves at full rate.
    sc = make_scenario("deepseek-v3", "h200", tp=8, weight_dtype="fp8", act_dtype="bf16",
                       prompt_len=1024, profile="ideal")  # fmt: skip
    (core,) = [p for p in make_pipeline(sc).price_step(Step("decode", 1.0, 1.0, 1100.0))
               if p.op.name == "attn.core"]  # fmt: skip
    gpu, heads, width, rank = sc.gpu, 128 // 8, 512 + 64, 512
    N = 1100 / 128  # < ceil(132 SMs / 1 program)
    latent = 1100 * width * 2
    rest = heads * width * 2 + heads * rank * 2 + width * 2 + width * 2  # q, o, new row in, out
    combine = 2 * heads * N * (width + 1) * 4  # fp32 partials and log-sum-exps, out and back
    expected = (latent / (N / gpu.sm_count) + rest + combine) / gpu.hbm_bytes_per_s
    assert float(core.time_s) == pytest.approx(expected, rel=1e-12)


def test_rows_say_whether_their_call_reprices():
    # Default stack over a whole decode grid (127 steps): every row's call is exact. A transform
    # that changes the kernel beyond its call's columns (2:4 sparsity halves the GEMMs' FLOPs
    # and weights) keeps the call it started from and says it no longer re-prices.
    sc = make_scenario("llama-3-8b", "a100-sxm-80gb", batch=4, profile="calibrated")
    assert all(o["call_exact"] for o in with_call_exact(run(sc))["ops"])
    sparse = with_call_exact(run(sc, ["sparsity-2:4"]))["ops"]
    stale = {o["name"] for o in sparse if not o["call_exact"]}
    assert stale == {"attn.qkv_proj", "attn.o_proj", "mlp.up_gate", "mlp.down"}


def test_serialising_a_prediction_prices_nothing(monkeypatch):
    # to_dict reads the figures the prediction holds: with every pricing entry point broken,
    # it still serialises, and to the same ops the CLI's JSON shows (call_exact aside)
    pred = run(make_scenario("llama-3-8b", "a100-sxm-80gb", batch=4))
    import rooflens.model.pricing.kernel_table as kernel_table
    import rooflens.model.pricing.reprice as reprice

    def broken(*_a, **_k):
        raise AssertionError("to_dict priced an op")

    monkeypatch.setattr(reprice, "predict_frame", broken)
    monkeypatch.setattr(kernel_table, "predict_frame", broken)
    ops = pred.to_dict()["ops"]
    assert len(ops) == len(pred.prefill.priced) + len(pred.decode.priced)
    assert all("call_exact" not in o for o in ops)


# Issue 23 §1: a whole step's element and byte counts pass 2³¹; `--json` re-prices them through
# kernels predict's path, which must not hold the operator table's own rows to a user's limits.
BIG_STEPS = {
    "elements": ("llama-3-8b", "h100-sxm", {"batch": 128, "prompt_len": 1024}),
    "long-prompt": ("qwen2.5-7b", "a100-sxm-80gb", {"batch": 64, "prompt_len": 8192}),
    "comm_bytes": ("llama-3-70b", "h100-sxm", {"tp": 4, "batch": 256, "prompt_len": 2048}),
}


@pytest.mark.parametrize("name", list(BIG_STEPS))
def test_rows_past_int32_reprice_in_predict_json(name):
    model, gpu, settings = BIG_STEPS[name]
    sc = make_scenario(model, gpu, output_len=2, **settings)
    ops = with_call_exact(run(sc))["ops"]  # what `predict --json` prints
    sizes = [o.get(c) for o in ops for c in ("elements_read", "comm_bytes", "rows")]
    assert max(float(v) for v in sizes if isinstance(v, int | float)) > 2**31  # the premise
    assert all(o["call_exact"] for o in ops), [o["name"] for o in ops if not o["call_exact"]]


def test_a_users_table_keeps_its_int32_limit():
    table = pd.DataFrame([{"op": "elementwise", "elements_read": 3 * 2**30,
                           "elements_written": 1, "dtype": "bf16"}])  # fmt: skip
    with pytest.raises(Exception, match="elements_read must be a positive number ≤ 2,147,483,647"):
        predict_kernels(table, get_gpu("h100-sxm"))
