"""Deployable settings (model/analysis/launch.py): every flag emitted for every engine is one the
engine
documents with an allowed value (the table cites its docs page), and the values are the
scenario's own: TP/PP/EP, the batch that fits, KV dtype, quantization, chunked prefill,
speculative decoding."""

from __future__ import annotations

import itertools

import pytest

from rooflens.model.analysis.launch import ENGINES, LaunchSettings, check, launch_settings
from rooflens.model.predict.api import make_scenario

SCENARIOS = [
    ("llama-3-70b", dict(tp=4), ()),
    ("llama-3-70b", dict(tp=8, kv_dtype="fp8", weight_dtype="fp8"), ("speculative",)),
    ("llama-3.1-70b", dict(tp=2, pp=2, weight_dtype="int4"), ("quant:scheme=gptq", "medusa")),
    ("mixtral-8x7b", dict(tp=2, ep=2, kv_dtype="int8"), ("lookahead",)),
    ("llama-3-8b", dict(prefill_chunk=0), ()),
]


@pytest.mark.parametrize(("engine", "case"), list(itertools.product(ENGINES, SCENARIOS)))
def test_every_flag_is_documented_and_carries_the_scenario(engine: str, case) -> None:  # type: ignore[no-untyped-def]
    model, kw, opts = case
    sc = make_scenario(model, "h100-sxm", **kw)
    settings = launch_settings(engine, sc, opts, 37)
    assert check(settings) == []
    flags = dict(settings.args)
    tp = {"vllm": "--tensor-parallel-size", "sglang": "--tp-size", "tensorrt-llm": "--tp_size"}
    seqs = {"vllm": "--max-num-seqs", "sglang": "--max-running-requests",
            "tensorrt-llm": "--max_batch_size"}  # fmt: skip
    assert flags[tp[engine]] == kw.get("tp", 1) and flags[seqs[engine]] == 37
    context = sc.context_tokens
    assert context in flags.values()
    kv_fp8 = kw.get("kv_dtype") == "fp8"
    assert kv_fp8 == any("fp8" in str(v) for k, v in [*settings.args, *settings.config.items()]
                         if "kv" in k)  # fmt: skip
    if kw.get("kv_dtype") == "int8":
        assert any("int8 KV cache" in n for n in settings.notes)


def test_speculative_names_the_drafts_checkpoint() -> None:
    sc = make_scenario("llama-3-70b", "h100-sxm", tp=4)
    vllm = launch_settings("vllm", sc, ["speculative:gamma=5"], 8)
    doc = dict(vllm.args)["--speculative-config"]
    assert '"num_speculative_tokens": 5' in doc and "meta-llama/Llama-3.1-8B" in doc
    sglang = dict(launch_settings("sglang", sc, ["speculative:gamma=5"], 8).args)
    assert sglang["--speculative-num-steps"] == 5 and sglang["--speculative-num-draft-tokens"] == 6


def test_check_rejects_what_the_docs_do_not_list() -> None:
    bad = LaunchSettings("vllm", "m", [("--tensor-parallel", 4), ("--kv-cache-dtype", "int8")])
    problems = check(bad)
    assert len(problems) == 2 and "no flag --tensor-parallel" in problems[0]
    assert all(e.docs.startswith("https://") for e in ENGINES.values())
