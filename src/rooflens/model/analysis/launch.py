"""Deployable settings: a scenario's launch arguments for the engines users run (vLLM, SGLang,
TensorRT-LLM), as data, checked against each engine's documented flags.

`ENGINES` is the table of what each engine documents (its launch command, the page it is
documented on, and every flag used here with its allowed values); `launch_settings` maps a
scenario (TP/PP/EP, the batch that fits, KV dtype, weight quantization, the chunked-prefill
budget, the context, speculative decoding) onto them; `check` rejects any flag or value the table
does not document, so an export never invents a flag. A setting an engine cannot express comes
back as a note instead. Formatting (a shell command, YAML) is the front end's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rooflens.hardware.profiles import ENGINE_NAMES
from rooflens.model.optimizations import parse_opt
from rooflens.model.optimizations.base import Optimization
from rooflens.model.predict.scenario import Scenario
from rooflens.model.specs.spec import ModelSpec

INT = "int"  # any positive integer
FLAG = "flag"  # a switch without a value
TEXT = "text"  # a path, a model id or a JSON document


@dataclass(frozen=True)
class Engine:
    name: str
    command: str  # the launch command, MODEL standing for the checkpoint
    docs: str  # where the flags below are documented
    flags: dict[str, str | tuple[str, ...]]  # flag -> INT, FLAG, TEXT or the allowed values
    config_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)  # extra-options YAML


ENGINES: dict[str, Engine] = {
    "vllm": Engine(
        ENGINE_NAMES["vllm"],
        "vllm serve MODEL",
        "https://docs.vllm.ai/en/latest/configuration/engine_args.html",
        {
            "--tensor-parallel-size": INT,
            "--pipeline-parallel-size": INT,
            "--enable-expert-parallel": FLAG,
            "--max-num-seqs": INT,
            "--kv-cache-dtype": ("auto", "fp8", "fp8_e4m3", "fp8_e5m2"),
            "--quantization": ("awq", "gptq", "fp8", "bitsandbytes", "compressed-tensors"),
            "--max-num-batched-tokens": INT,
            "--enable-chunked-prefill": FLAG,
            "--max-model-len": INT,
            "--speculative-config": TEXT,
        },
    ),
    "sglang": Engine(
        ENGINE_NAMES["sglang"],
        "python -m sglang.launch_server --model-path MODEL",
        "https://docs.sglang.ai/advanced_features/server_arguments.html",
        {
            "--tp-size": INT,
            "--pp-size": INT,
            "--ep-size": INT,
            "--max-running-requests": INT,
            "--kv-cache-dtype": ("auto", "fp8_e5m2", "fp8_e4m3"),
            "--quantization": ("awq", "gptq", "fp8", "w8a8_int8", "w8a8_fp8"),
            "--chunked-prefill-size": INT,
            "--context-length": INT,
            "--speculative-algorithm": ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE"),
            "--speculative-draft-model-path": TEXT,
            "--speculative-num-steps": INT,
            "--speculative-num-draft-tokens": INT,
            "--speculative-eagle-topk": INT,
        },
    ),
    "tensorrt-llm": Engine(
        ENGINE_NAMES["trtllm"],
        "trtllm-serve MODEL",
        "https://nvidia.github.io/TensorRT-LLM/commands/trtllm-serve/trtllm-serve.html",
        {
            "--tp_size": INT,
            "--pp_size": INT,
            "--ep_size": INT,
            "--max_batch_size": INT,
            "--max_num_tokens": INT,
            "--max_seq_len": INT,
            "--extra_llm_api_options": TEXT,
        },
        # LLM API options in the YAML that --extra_llm_api_options reads (same docs page)
        {
            "kv_cache_config.dtype": ("auto", "fp8"),
            "enable_chunked_prefill": ("true", "false"),
            "speculative_config.decoding_type": ("DraftTarget", "Medusa", "Lookahead", "Eagle"),
            "speculative_config.max_draft_len": (INT,),
            "speculative_config.speculative_model_dir": (TEXT,),
        },
    ),
}


@dataclass(frozen=True)
class LaunchSettings:
    engine: str  # a key of ENGINES
    model: str  # the checkpoint (Hugging Face repo id where the preset cites one)
    args: list[tuple[str, Any]]  # (flag, value); value True for a switch
    config: dict[str, Any] = field(default_factory=dict)  # extra-options YAML, dotted keys
    notes: list[str] = field(default_factory=list)  # what the engine cannot express


def checkpoint(spec: ModelSpec) -> str:
    """The Hugging Face repo id the preset's config source cites, else the preset id."""
    source = str(spec.sources.get("config", "")) if spec.sources else ""
    found = re.search(r"huggingface\.co/([^/]+/[^/]+)", source)
    return found.group(1) if found else spec.id


def _quant(sc: Scenario, opts: Sequence[Optimization]) -> str | None:
    """The weight-quantization method: the quant optimization's scheme, else by weight dtype."""
    for o in opts:
        if o.name == "quant":
            return {"awq": "awq", "gptq": "gptq", "fp8": "fp8", "smoothquant": "w8a8"}.get(
                str(o["scheme"]), str(o["scheme"])
            )
    return {"fp8": "fp8", "int4": "awq", "int8": "w8a8"}.get(sc.precision.weight_dtype)


def launch_settings(
    engine: str, sc: Scenario, opts: Sequence[str | Optimization], max_num_seqs: int
) -> LaunchSettings:
    """The engine's launch settings for this scenario; `max_num_seqs` the batch that fits."""
    parsed = [parse_opt(o) if isinstance(o, str) else o for o in opts]
    by_name = {o.name: o for o in parsed}
    p, w = sc.parallel, sc.workload
    kv8 = sc.precision.kv_dtype == "fp8"
    quant = _quant(sc, parsed)
    chunk = w.prefill_chunk_tokens
    context = sc.context_tokens
    args: list[tuple[str, Any]] = []
    config: dict[str, Any] = {}
    notes: list[str] = []
    medusa, lookahead = by_name.get("medusa"), by_name.get("lookahead")
    spec: Any = by_name.get("speculative")
    if spec is not None and not spec["gamma"]:
        spec = None
    if sc.precision.kv_dtype in ("int8", "int4"):
        notes.append(f"a {sc.precision.kv_dtype} KV cache is not an option of {engine}: fp8 is")
    if engine == "vllm":
        args += [("--tensor-parallel-size", p.tp), ("--pipeline-parallel-size", p.pp)]
        args += [("--enable-expert-parallel", True)] if p.ep > 1 else []
        args += [("--max-num-seqs", max_num_seqs), ("--max-model-len", context)]
        args += [("--kv-cache-dtype", "fp8")] if kv8 else []
        if quant in ("awq", "gptq", "fp8"):
            args.append(("--quantization", quant))
        elif quant:
            notes.append(f"{quant} weights: serve a pre-quantized (compressed-tensors) checkpoint")
        if chunk:
            args += [("--enable-chunked-prefill", True), ("--max-num-batched-tokens", chunk)]
        if spec is not None:
            draft = checkpoint(spec.draft_spec(sc.model))
            doc = f'{{"model": "{draft}", "num_speculative_tokens": {spec["gamma"]}}}'
            args.append(("--speculative-config", doc))
        if medusa is not None:
            doc = f'{{"method": "medusa", "num_speculative_tokens": {medusa["heads"]}}}'
            args.append(("--speculative-config", doc))
        if lookahead is not None:
            notes.append("lookahead (Jacobi) decoding is not a vLLM method")
    elif engine == "sglang":
        args += [("--tp-size", p.tp), ("--pp-size", p.pp)]
        args += [("--ep-size", p.ep)] if p.ep > 1 else []
        args += [("--max-running-requests", max_num_seqs), ("--context-length", context)]
        args += [("--kv-cache-dtype", "fp8_e4m3")] if kv8 else []
        sglang_quant = {"w8a8": "w8a8_int8"}.get(quant or "", quant)
        args += [("--quantization", sglang_quant)] if sglang_quant else []
        args += [("--chunked-prefill-size", chunk)] if chunk else []
        if spec is not None:
            draft = checkpoint(spec.draft_spec(sc.model))
            args += [("--speculative-algorithm", "STANDALONE"),
                     ("--speculative-draft-model-path", draft),
                     ("--speculative-num-steps", spec["gamma"]),
                     ("--speculative-eagle-topk", 1),
                     ("--speculative-num-draft-tokens", spec["gamma"] + 1)]  # fmt: skip
        for name, o in (("medusa", medusa), ("lookahead", lookahead)):
            if o is not None:
                notes.append(f"{name} is not an SGLang speculative algorithm (EAGLE is)")
    elif engine == "tensorrt-llm":
        args += [("--tp_size", p.tp), ("--pp_size", p.pp)]
        args += [("--ep_size", p.ep)] if p.ep > 1 else []
        args += [("--max_batch_size", max_num_seqs), ("--max_seq_len", context)]
        args += [("--max_num_tokens", chunk)] if chunk else []
        if kv8:
            config["kv_cache_config.dtype"] = "fp8"
        if chunk:
            config["enable_chunked_prefill"] = "true"
        if quant:
            notes.append(f"{quant} weights: quantize the checkpoint with ModelOpt first")
        if spec is not None:
            draft = checkpoint(spec.draft_spec(sc.model))
            config.update({"speculative_config.decoding_type": "DraftTarget",
                           "speculative_config.max_draft_len": spec["gamma"],
                           "speculative_config.speculative_model_dir": draft})  # fmt: skip
        if medusa is not None:
            config.update({"speculative_config.decoding_type": "Medusa",
                           "speculative_config.max_draft_len": medusa["heads"]})  # fmt: skip
        if lookahead is not None:
            config["speculative_config.decoding_type"] = "Lookahead"
        if config:
            args.append(("--extra_llm_api_options", "extra-llm-api-options.yaml"))
    else:
        raise KeyError(engine)
    return LaunchSettings(engine, checkpoint(sc.model), args, config, notes)


def _valid(value: Any, allowed: str | tuple[str, ...]) -> bool:
    if allowed == FLAG:
        return value is True
    if allowed == INT or allowed == (INT,):
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1
    if allowed == TEXT or allowed == (TEXT,):
        return isinstance(value, str) and bool(value)
    return str(value) in allowed


def check(settings: LaunchSettings) -> list[str]:
    """What in `settings` the engine's documented table does not allow (empty when all is)."""
    engine = ENGINES[settings.engine]
    problems = []
    for flag, value in settings.args:
        if flag not in engine.flags:
            problems.append(f"{engine.name} documents no flag {flag}")
        elif not _valid(value, engine.flags[flag]):
            problems.append(f"{engine.name} {flag}: {value!r} is not allowed")
    for key, value in settings.config.items():
        if key not in engine.config_keys:
            problems.append(f"{engine.name} documents no option {key}")
        elif not _valid(value, engine.config_keys[key]):
            problems.append(f"{engine.name} {key}: {value!r} is not allowed")
    return problems
