"""Test-sized copies of the model presets for the `validate e2e` tests (test_e2e_*.py), and the
presets the e2e decoder builds: those it refuses (validate/e2e/layout.py) are parameters that
skip with the refusal as their reason, so a report shows which and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.model.specs.presets import get_model, model_ids
from rooflens.model.specs.spec import ModelSpec
from rooflens.model.specs.vision import VisionSpec
from rooflens.validate.e2e.layout import layer_kinds, unsupported_reason

TINY = (
    Path(__file__).resolve().parents[2]
    / "src"
    / "rooflens"
    / "validate"
    / "e2e"
    / "tiny-llama.yaml"
)
WINDOW = 8  # test-sized sliding window: the tests run 20 tokens, well past it
TINY_VISION = VisionSpec(
    n_layers=2, d_model=32, d_ff=40, n_heads=4, patch_size=4, image_size=16, tokens_per_image=4
)


def _preset(preset: str) -> object:
    reason = unsupported_reason(get_model(preset))
    return pytest.param(preset, marks=pytest.mark.skip(reason=reason)) if reason else preset


PRESETS = [_preset(i) for i in model_ids()]  # every preset; refused ones skip with the reason
REFUSED = [i for i in model_ids() if unsupported_reason(get_model(i))]


def shrink(preset: str, **extra: object) -> ModelSpec:
    """The preset's layout (family, norms, MLP, biases, MoE, positions, layer kinds, q/k norms,
    sinks, vision) at test-sized widths."""
    m = get_model(preset)
    kv = {"mha": 4, "mqa": 1}.get(m.attention, 2)
    n_layers = int(extra.get("n_layers", 3))  # type: ignore[call-overload]
    dims = {
        "n_layers": n_layers,
        "d_model": 48,
        "n_heads": 4,
        "n_kv_heads": kv,
        "head_dim": 12,
        "d_ff": 40,
        "vocab_size": 97,
        "max_context": 64,
        "d_ff_expert": 24 if m.is_moe else 0,
        "max_position_embeddings": 66 if m.positional == "learned" else 0,
        "sliding_window": WINDOW if m.sliding_window else 0,
        "layer_types": layer_kinds(m, n_layers),
        "vision": TINY_VISION if m.vision else None,
    }
    return type(m).model_validate({**m.model_dump(), **dims, **extra})


# A Llama-style step's operators in order, written out by hand (the independent expectation the
# e2e scopes and results are checked against).
LLAMA_OPS = (
    "embed",
    "norm.attn",
    "attn.qkv_proj",
    "attn.rope",
    "attn.core",
    "attn.o_proj",
    "norm.mlp",
    "mlp.up_gate",
    "mlp.act",
    "mlp.down",
    "norm.final",
    "lm_head",
)
