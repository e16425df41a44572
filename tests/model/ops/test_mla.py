"""MLA (model/ops/mla.py, DeepSeek-V2 §2.1.2): the absorbed decode reads the shared latent once
for all heads (R + rope dims per position), its FLOPs are q·k over R + rope and p·v over R, and
DeepSeek-V3's table uses it with its published dimensions (R 512, rope 64, 128 heads)."""

from __future__ import annotations

import pytest

from rooflens.model.ops.mla import mla_decode_op
from rooflens.model.ops.table import build_ops
from rooflens.model.predict.api import make_scenario

B, L, H, R, ROPE = 2.0, 1000.0, 16, 512, 64


def test_absorbed_decode_closed_form() -> None:
    op = mla_decode_op("decode", 1, B, 1.0, L, H, R, ROPE, "bf16", "bf16")
    width = R + ROPE
    assert float(op.flops) == 2 * B * H * L * (width + R)
    # the latent of L positions read once, the new row written: no per-head factor
    assert float(op.kv_bytes) == B * L * width * 2 + B * width * 2
    assert op.call["op"] == "mla_decode" and op.shape["n_kv_heads"] == 1


def test_the_latent_is_shared_by_the_heads() -> None:
    one = mla_decode_op("decode", 1, B, 1.0, L, H, R, ROPE, "bf16", "bf16")
    two = mla_decode_op("decode", 1, B, 1.0, L, 2 * H, R, ROPE, "bf16", "bf16")
    assert float(two.kv_bytes) == float(one.kv_bytes)
    assert float(two.flops) == 2 * float(one.flops)


def test_fp8_latent_halves_the_cache_read() -> None:
    bf16 = mla_decode_op("decode", 1, B, 1.0, L, H, R, ROPE, "bf16", "bf16")
    fp8 = mla_decode_op("decode", 1, B, 1.0, L, H, R, ROPE, "bf16", "fp8")
    assert float(fp8.kv_bytes) == pytest.approx(float(bf16.kv_bytes) / 2)


def test_deepseek_v3_decode_uses_its_dimensions() -> None:
    sc = make_scenario("deepseek-v3", "h200", tp=8, batch=4)
    m = sc.model
    assert (m.kv_lora_rank, m.qk_rope_head_dim, m.n_heads) == (512, 64, 128)
    core = next(o for o in build_ops(sc, "decode", 4.0, 1.0, L) if o.name == "attn.core")
    expected = mla_decode_op("decode", m.n_layers, 4.0, 1.0, L, m.n_heads // 8, 512, 64,
                             sc.precision.act_dtype, sc.precision.kv_dtype)  # fmt: skip
    assert float(core.flops) == float(expected.flops)
    assert float(core.kv_bytes) == float(expected.kv_bytes)
