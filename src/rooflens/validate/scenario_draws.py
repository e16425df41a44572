"""The scenario spaces the physics checks (validate/scenario_space.py) are run over, as `random`
draws: `realistic`, issue 23's sample of what users serve (models from Llama to DeepSeek-V3,
GPUs from A10 to B200, TP 1–8, batch 1–512, prompt 128–16k, the common precisions and
optimizations), and `wide`, the whole space the hypothesis property test draws
(tests/model/test_scenario_space.py: every preset, TP/PP/EP, batch 1–1024, prompt 1–128k),
where some draws are invalid scenarios (`valid`). benchmarks/scenario_space.py prints the
checks' counts over either.
"""

from __future__ import annotations

import random
from typing import Any

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import get_gpu, gpu_ids
from rooflens.model.predict.api import make_scenario
from rooflens.model.predict.scenario import lacks_fp8
from rooflens.model.specs.presets import get_model, model_ids
from rooflens.model.specs.quant import SCHEMES

# The realistic space of issue 23: models, GPUs from A10 to B200, TP 1–8, precisions, and the
# common optimizations.
MODELS = ("llama-3-8b", "llama-3-70b", "llama-3.1-8b", "qwen2.5-7b", "qwen3-8b", "qwen3-30b-a3b",
          "mixtral-8x7b", "gemma-3-4b", "gpt-oss-20b", "gpt-oss-120b", "deepseek-v3",
          "mistral-7b", "llama-2-13b")  # fmt: skip
GPUS = ("a10", "l4", "a100-sxm-80gb", "l40s", "h100-sxm", "h200", "b200")
TPS = (1, 2, 4, 8)
# A scenario's precision: {} is the model's native recipe; (weight_dtype, act_dtype) pairs;
# and the schemes engines name (`--quant`) that the dtypes alone do not say: FP8 with 128-block
# scales, int8 weight-only, SmoothQuant (each priced by its own kernel family).
PRECISIONS: tuple[dict[str, str], ...] = (
    {}, {"weight_dtype": "bf16", "act_dtype": "bf16"}, {"weight_dtype": "fp8", "act_dtype": "fp8"},
    {"weight_dtype": "int4", "act_dtype": "bf16"}, {"weight_dtype": "fp8", "act_dtype": "bf16"},
    {"quant": "fp8-block"}, {"quant": "w8a16"}, {"quant": "smoothquant"},
)  # fmt: skip
OPTS: tuple[tuple[str, ...], ...] = ((), ("fusion",), ("paged-kv",), ("eager-launch",))


def realistic(rng: random.Random) -> dict[str, Any]:
    """One scenario of the realistic space (issue 23): batch 1–512, prompt 128–16k."""
    model = rng.choice(MODELS)
    spec = get_model(model)
    tps = [t for t in TPS if spec.n_heads % t == 0]
    precision = rng.choice(PRECISIONS)
    output_len = rng.choice((16, 128))
    # the check doubles the prompt: both must fit the model's context
    longest = (spec.max_context - output_len) // 2
    settings: dict[str, Any] = {
        "model": model, "gpu": rng.choice(GPUS), "tp": rng.choice(tps),
        "batch": int(2 ** rng.uniform(0, 9)),
        "prompt_len": min(int(2 ** rng.uniform(7, 14)), longest),
        "output_len": output_len, "opts": rng.choice(OPTS), **precision,
    }  # fmt: skip
    if _fp8_activations(precision) and lacks_fp8(get_gpu(settings["gpu"])):
        # no fp8 units: engines serve an FP8 checkpoint weight-only (vLLM's FP8 Marlin), and
        # W8A8-FP8 itself is refused there (model/predict/scenario.py)
        settings.pop("quant", None)
        settings.update(weight_dtype="fp8", act_dtype="bf16")
    return settings


# The whole space of the property test (tests/model/test_scenario_space.py): every preset model
# and GPU, TP/PP/EP, batch 1–1024, prompt 1–128k, every precision and option set. Some draws are
# invalid scenarios (fp8 activations without FP8 units, a TP that splits no KV heads, ...):
# `valid` says which.
WIDE_TPS, WIDE_PPS = TPS, (1, 2)
WIDE_MAX_BATCH, WIDE_MAX_PROMPT, WIDE_OUTPUT = 1024, 128 * 1024, (2, 64)


def wide(rng: random.Random) -> dict[str, Any]:
    """One draw of the property test's whole space (a `random` twin of its hypothesis strategy)."""
    model = rng.choice(model_ids())
    spec = get_model(model)
    tp = rng.choice([t for t in WIDE_TPS if spec.n_heads % t == 0])
    output_len = rng.randint(*WIDE_OUTPUT)
    longest = min(WIDE_MAX_PROMPT, (spec.max_context - output_len) // 2)  # the check doubles it
    return {
        "model": model, "gpu": rng.choice(gpu_ids()), "tp": tp,
        "pp": rng.choice([p for p in WIDE_PPS if spec.n_layers % p == 0]),
        "ep": rng.choice([1, tp] if spec.n_experts else [1]),
        "batch": rng.randint(1, WIDE_MAX_BATCH), "prompt_len": rng.randint(1, max(1, longest)),
        "output_len": output_len, "opts": rng.choice(OPTS), **rng.choice(PRECISIONS),
    }  # fmt: skip


def valid(settings: dict[str, Any]) -> bool:
    """A draw the scenario schema accepts; the others are one-line refusals (exit 2), which the
    CLI and dashboard tests check."""
    fields = {k: v for k, v in settings.items() if k not in ("model", "gpu", "opts")}
    try:
        make_scenario(settings["model"], settings["gpu"], **fields)
    except RooflensError:
        return False
    return True


def _fp8_activations(precision: dict[str, str]) -> bool:
    """Whether a drawn precision runs its matmuls on fp8 activations: its own act_dtype, else
    its scheme's (model/specs/quant.py SCHEMES: W8A8-FP8, FP8-block)."""
    scheme = SCHEMES.get(precision.get("quant", ""))
    act = precision.get("act_dtype") or (scheme.act_dtype if scheme else "")
    return act == "fp8"
