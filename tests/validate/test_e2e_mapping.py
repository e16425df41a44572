"""Operator attribution of `validate e2e`: every operator the prediction names has a scope in the
decoder's forward (so its measured time can be found), the profiler's times land under those
scopes, and --layers scales per-layer operators by depth and keeps the rest whole."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from rooflens.model.pricing.host import HOST_OP
from rooflens.validate.e2e.decoder import Decoder
from rooflens.validate.e2e.measure import Timing, attribute
from rooflens.validate.e2e.predict import PhasePrediction, RunSetup, predict_phase
from rooflens.validate.e2e.run import UNATTRIBUTED, RunConfig, _row

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_specs import LLAMA_OPS, PRESETS, shrink


def _scopes_seen(model: Decoder, step) -> set[str]:  # type: ignore[no-untyped-def]
    from torch.profiler import profile

    model.scopes.on = True
    with profile() as prof:
        step()
    model.scopes.on = False
    return {e.name for e in prof.events()}


@pytest.mark.parametrize("preset", PRESETS)
def test_every_predicted_operator_has_a_scope(preset):
    spec = shrink(preset)
    setup = RunSetup(spec, "h100-sxm", "ideal", "fp32", 1e-5, overlapped=True)
    model = Decoder(spec, batch=2, capacity=17).init_weights()
    prompt, token = torch.randint(0, 97, (2, 16)), torch.randint(0, 97, (2, 1))
    with torch.inference_mode():
        for phase, step in (
            ("prefill", lambda: model(prompt, 0)),
            ("decode", lambda: model(token, 16)),
        ):
            predicted = set(predict_phase(setup, phase, 2, 16, graphed=False).ops) - {HOST_OP}
            seen = _scopes_seen(model, step)
            assert predicted <= seen, f"{phase}: no scope for {sorted(predicted - seen)}"


def test_every_predicted_vision_operator_has_a_scope_when_images_are_given():
    """Gemma 3 4B with one image per prompt (`--images 1`): the prediction's `vision.*` rows
    (model/ops/vision.py) all have their scope in the encoder's forward, and run once whatever
    --layers says; without images there are none."""
    from rooflens.validate.e2e.predict import is_whole

    spec = shrink("gemma-3-4b")
    context = 16  # 4 image tokens, then 12 of text
    setup = RunSetup(spec, "h100-sxm", "ideal", "fp32", 1e-5, overlapped=True, images=1)
    predicted = set(predict_phase(setup, "prefill", 2, context, graphed=False).ops)
    vision = {n for n in predicted if n.startswith("vision.")}
    assert len(vision) == 12 and all(is_whole(n) for n in vision)
    model = Decoder(spec, batch=2, capacity=context + 1).init_weights()
    v = spec.vision
    pixels = torch.randn(2, 1, v.channels, v.image_size, v.image_size)
    tokens = torch.randint(0, spec.vocab_size, (2, context))
    with torch.inference_mode():
        seen = _scopes_seen(model, lambda: model(tokens, 0, pixels=pixels))
        logits = model(tokens, 0, pixels=pixels)
        without = model(tokens, 0)
    assert vision <= seen, f"no scope for {sorted(vision - seen)}"
    assert not torch.allclose(logits, without)  # the image tokens reach the language model
    text_only = RunSetup(spec, "h100-sxm", "ideal", "fp32", 1e-5, overlapped=True)
    ops = predict_phase(text_only, "prefill", 2, context, graphed=False).ops
    assert not any(n.startswith("vision.") for n in ops)


def test_attribution_puts_time_under_each_scope_and_not_more_than_the_step():
    spec = shrink("llama-3-8b", d_model=128, head_dim=32, d_ff=256)
    model = Decoder(spec, batch=1, capacity=65).init_weights()
    prompt = torch.randint(0, 97, (1, 64))
    names = list(LLAMA_OPS)
    with torch.inference_mode():
        times = attribute(lambda: model(prompt, 0), model.scopes, "cpu", names, runs=3)
    assert set(times) == set(names) and all(t > 0 for t in times.values())
    # the GEMM of 64×128×512 outweighs the 64-row embedding gather
    assert times["mlp.up_gate"] > times["embed"]


def test_layers_scale_per_layer_ops_and_keep_embed_and_lm_head_whole():
    spec = shrink("llama-3-8b", n_layers=8)
    setup = RunSetup(spec, "h100-sxm", "ideal", "fp32", 1e-5, overlapped=True)
    cfg = RunConfig(setup, "cpu", [1], [16], layers=2, free_bytes=1e12)
    measured = {"embed": 1.0, "lm_head": 3.0, "norm.final": 0.0, "mlp.down": 2.0, "attn.core": 4.0}
    predicted = PhasePrediction("decode", 9.0, {**dict.fromkeys(measured, 1.0), HOST_OP: 0.5})
    timing = Timing(median_s=12.0, q20_s=11.0, q80_s=13.0, repeats=5)  # 2 s unattributed
    row = _row(cfg, "decode", 1, 16, timing, predicted, measured)
    ops = {o["name"]: o["measured_s"] for o in row["ops"]}
    factor = 8 / 2
    assert ops["embed"] == 1.0 and ops["lm_head"] == 3.0
    assert ops["mlp.down"] == 2.0 * factor and ops["attn.core"] == 4.0 * factor
    full = 4.0 + factor * 6.0  # whole + scaled per-layer time
    assert ops[UNATTRIBUTED] == pytest.approx(2.0 * full / 10.0)
    assert row["measured_s"] == pytest.approx(12.0 * full / 10.0)
    assert row["measured_s"] == pytest.approx(sum(ops.values()))  # the parts add up
    assert next(o for o in row["ops"] if o["name"] == UNATTRIBUTED)["predicted_s"] == 0.5


def test_profiler_events_land_under_their_operator_scope():
    """The GPU route (torch.profiler events walked up to their scope), checked on CPU events."""
    from torch.profiler import profile

    from rooflens.validate.e2e.measure import _scope_times

    spec = shrink("llama-3-8b", d_model=128, head_dim=32, d_ff=256)
    model = Decoder(spec, batch=1, capacity=33).init_weights()
    prompt = torch.randint(0, 97, (1, 32))
    names = {"attn.qkv_proj", "mlp.up_gate", "mlp.down", "lm_head", "norm.attn"}
    with torch.inference_mode():
        model.scopes.on = True
        with profile() as prof:
            model(prompt, 0)
        model.scopes.on = False
    times = _scope_times(prof.events(), names, "cpu")
    assert all(times[n] > 0 for n in names)
    scope_total = sum(e.cpu_time_total for e in prof.events() if e.name in names) * 1e-6
    assert sum(times.values()) <= scope_total  # what runs beneath a scope, never more
