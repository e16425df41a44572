"""Which layers a `validate e2e` run builds (validate/e2e/layout.py) and what it is predicted
as (validate/e2e/predict.py run_scenario): layer kinds kept in proportion under --layers, every
layer's window and sink as the spec says, one dtype for the run and the prediction."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from rooflens.model.specs.presets import get_model
from rooflens.validate.e2e.decoder import Decoder
from rooflens.validate.e2e.layout import layer_kinds, with_layers
from rooflens.validate.e2e.predict import RunSetup, memory_needed_bytes, run_scenario

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_specs import WINDOW, shrink


@pytest.mark.parametrize(
    ("preset", "n", "expected"),
    [
        ("gemma-3-1b", 6, {"sliding": 5, "full": 1}),  # 5 local per global (26 layers: 22 + 4)
        ("gemma-3-4b", 3, {"sliding": 2, "full": 1}),  # each kind at least once
        ("gpt-oss-20b", 4, {"sliding": 2, "full": 2}),  # alternating
        ("gpt-oss-20b", 1, {"sliding": 1}),  # one layer: the first kind
    ],
)
def test_layers_keep_the_mix_of_layer_kinds(preset, n, expected):
    spec = get_model(preset)
    kinds = layer_kinds(spec, n)
    assert len(kinds) == n and {k: kinds.count(k) for k in set(kinds)} == expected
    assert with_layers(spec, n).window_layers == {
        spec.sliding_window if k == "sliding" else 0: c for k, c in expected.items()
    }


def test_all_layers_is_the_spec_itself_and_a_uniform_model_keeps_no_kinds():
    spec = get_model("gemma-3-1b")
    assert with_layers(spec, spec.n_layers) is spec
    llama = with_layers(get_model("llama-3-8b"), 4)
    assert llama.n_layers == 4 and llama.layer_types == ()


@pytest.mark.parametrize("preset", ["gemma-3-1b", "gpt-oss-20b", "qwen3-8b"])
def test_each_layer_gets_its_window_from_the_layer_types(preset):
    spec = shrink(preset, n_layers=3)
    with torch.device("meta"):
        model = Decoder(spec, device="meta", capacity=24)
    windows = [layer.attn.window for layer in model.layers]
    kinds = spec.layer_types or ("full",) * 3
    assert windows == [WINDOW if k == "sliding" else 0 for k in kinds]


@pytest.mark.parametrize(("kind", "sees_old_tokens"), [("sliding", False), ("full", True)])
def test_a_sliding_layer_ignores_tokens_past_its_window_and_a_full_layer_does_not(
    kind, sees_old_tokens
):
    spec = shrink("gemma-3-1b", n_layers=1, layer_types=(kind,))
    model = Decoder(spec, batch=1, capacity=24).init_weights()
    a = torch.randint(0, spec.vocab_size, (1, 20))
    b = a.clone()
    b[0, :4] = (a[0, :4] + 1) % spec.vocab_size  # 16+ positions back from the last token
    with torch.inference_mode():
        same = torch.allclose(model(a, 0), model(b, 0))
    assert same != sees_old_tokens


def test_memory_check_at_fewer_layers_prices_those_layers():
    """--layers on a model with layer kinds: fewer layers, less memory (weights and KV)."""
    setup = RunSetup(get_model("gemma-3-1b"), "h100-sxm", "ideal", "bf16", 1e-5, True)
    two, six = (memory_needed_bytes(setup, 1, 4096, n, 0.0) for n in (2, 6))
    full = memory_needed_bytes(setup, 1, 4096, 26, 0.0)
    assert two < six < full


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_the_prediction_uses_the_runs_dtype_for_every_weight(dtype):
    """gpt-oss ships MXFP4 experts; e2e builds them in --dtype, and predicts them so too."""
    spec = get_model("gpt-oss-20b")
    assert spec.native_expert_dtype == "mxfp4"
    sc = run_scenario(RunSetup(spec, "h100-sxm", "ideal", dtype, 1e-5, True), 1, 1024)
    p = sc.precision
    assert (p.weight_dtype, p.expert_dtype, p.act_dtype, p.kv_dtype) == (dtype,) * 4


def test_the_output_says_which_dtype_ran_and_what_the_checkpoint_ships():
    from rooflens.validate.e2e.cli import _dtype_note

    note = _dtype_note(get_model("gpt-oss-20b"), "bf16")
    assert "in bf16, in the run and the prediction" in note and "bf16 and mxfp4" in note
    assert "(" not in _dtype_note(get_model("llama-3-8b"), "bf16")
