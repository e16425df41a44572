"""Vision-language models: image tokens join the prompt, the SigLIP encoder is priced as a
prefill stage, and its parameters match the Gemma 3 report."""

from __future__ import annotations

import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.ops.table import build_ops
from rooflens.model.predict.api import make_pipeline, make_scenario, run
from rooflens.model.predict.memory import kv_bytes_per_token
from rooflens.model.specs.params import count_params
from rooflens.model.specs.presets import get_model


def test_gemma3_4b_parameters_match_the_report_columns() -> None:
    # Gemma 3 report table 1 (4B): vision encoder 417M, embedding 675M, non-embedding 3,209M
    m = get_model("gemma-3-4b")
    pc = count_params(m)
    projector = 1152 + 1152 * 2560  # mm_soft_emb_norm + mm_input_projection_weight
    assert (pc.vision - projector) / 1e6 == pytest.approx(417, abs=0.5)
    assert (pc.embedding + projector) / 1e6 == pytest.approx(675, abs=1.0)
    assert (pc.total - pc.embedding - pc.vision) / 1e6 == pytest.approx(3209, abs=0.5)


def test_image_tokens_count_as_prompt_tokens() -> None:
    text = make_scenario("gemma-3-4b", "l4", prompt_len=200, output_len=8)
    two = make_scenario("gemma-3-4b", "l4", prompt_len=200, output_len=8, images=2)
    assert two.workload.prompt_len == 200 + 2 * 256
    held = make_pipeline(two).memory().kv_cache_bytes - make_pipeline(text).memory().kv_cache_bytes
    # every layer holds the 512 extra positions (all within the 1024 window here)
    assert held == pytest.approx(512 * kv_bytes_per_token(text))


def test_encoder_is_a_prefill_stage_with_closed_form_attention() -> None:
    sc = make_scenario("gemma-3-4b", "h100-sxm", batch=3, prompt_len=100, output_len=4, images=1)
    prefill = build_ops(sc, "prefill", 3.0, 356.0, 356.0)
    (attn,) = [op for op in prefill if op.name == "vision.attn"]
    patches, heads, dh = 4096, 16, 72
    assert attn.count == 27
    assert attn.flops == pytest.approx(4 * 3 * heads * patches**2 * dh)  # bidirectional
    (proj,) = [op for op in prefill if op.name == "vision.projector"]
    assert proj.flops == pytest.approx(2 * 3 * 256 * 2560 * 1152)
    decode = build_ops(sc, "decode", 3.0, 1.0, 400.0)
    assert not [op for op in decode if op.name.startswith("vision.")]  # runs once, at prefill


def test_images_raise_ttft_by_at_least_the_encoder_time() -> None:
    no_img = run(make_scenario("gemma-3-4b", "h100-sxm", prompt_len=612, output_len=8))
    img = run(make_scenario("gemma-3-4b", "h100-sxm", prompt_len=356, output_len=8, images=1))
    # the same 612 LM prompt tokens; the image one also runs the encoder
    encoder_s = sum(float(p.total_s) for p in img.prefill.priced if p.op.name.startswith("vision."))
    assert encoder_s > 0
    assert img.ttft_s == pytest.approx(no_img.ttft_s + encoder_s, rel=1e-6)


def test_images_on_a_text_model_or_too_short_a_prompt_fail_in_one_line() -> None:
    with pytest.raises(RooflensError, match="no vision encoder"):
        make_scenario("llama-3.1-8b", "h100-sxm", images=1)
    with pytest.raises(RooflensError, match="must be ≥ 0"):
        make_scenario("gemma-3-4b", "h100-sxm", images=-1)
