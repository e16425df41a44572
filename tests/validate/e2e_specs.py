"""Test-sized copies of the model presets for the `validate e2e` tests (test_e2e_*.py)."""

from __future__ import annotations

from pathlib import Path

from model.presets import get_model, model_ids
from model.spec import ModelSpec

TINY = Path(__file__).resolve().parents[2] / "validate" / "e2e" / "tiny-llama.yaml"
RUNNABLE = [i for i in model_ids() if get_model(i).attention != "mla"]


def shrink(preset: str, **extra: object) -> ModelSpec:
    """The preset's layout (family, norms, MLP, biases, MoE, positions) at test-sized widths."""
    m = get_model(preset)
    kv = {"mha": 4, "mqa": 1}.get(m.attention, 2)
    dims = {
        "n_layers": 3,
        "d_model": 48,
        "n_heads": 4,
        "n_kv_heads": kv,
        "head_dim": 12,
        "d_ff": 40,
        "vocab_size": 97,
        "max_context": 64,
        "d_ff_expert": 24 if m.is_moe else 0,
        "max_position_embeddings": 66 if m.positional == "learned" else 0,
        "sliding_window": 5 if m.sliding_window else 0,
    }
    return type(m).model_validate({**m.model_dump(), **dims, **extra})
