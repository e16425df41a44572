"""The vision encoder of a vision-language model priced as a stage of prefill: every image of
the batch runs through the ViT (model/specs/vision.py) before the language model prefills its
prompt, in which the image's tokens count as prompt tokens (model/predict/api.py adds them).

Rows (names under `vision.`), for n images of Np patches each, M = n·Np patch rows:
patch_embed GEMM [M, C·p²]·[C·p², Dv]; per layer LayerNorm, qkv GEMM, bidirectional attention
(every patch attends every patch of its image: 4·n·Hv·Np²·Dh FLOPs, Q, K, V read and O written
once, FlashAttention style), o GEMM, LayerNorm, fc1 GEMM, GELU, fc2 GEMM; a final LayerNorm;
the average pool to T tokens per image and the projector GEMM [n·T, Dv]·[Dv, D].
The encoder's weights stay 16-bit (quantizers skip it) and are whole on every GPU, which runs
the whole encoder (no TP split, no collective).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rooflens.model.ops.op import Num, Op, gemm_op
from rooflens.model.specs.dtypes import dtype_bytes, unquantized

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario


def _elementwise(name: str, count: int, flops: Num, elems_in: Num, elems_out: Num, ab: float) -> Op:
    act = (elems_in + elems_out) * ab
    return Op(name=name, phase="prefill", kind="norm" if "norm" in name else "elementwise",
              count=count, flops=flops, weight_bytes=0.0, act_bytes=act, kv_bytes=0.0,
              compute_dtype="fp32", live_bytes=act)  # fmt: skip


def vision_ops(sc: Scenario, images: Num) -> list[Op]:
    """The encoder's rows for `images` images (B sequences × images per prompt)."""
    v, m, p = sc.model.vision, sc.model, sc.precision
    if v is None:
        return []
    act = p.act_dtype
    ab = dtype_bytes(act)
    plain = "fp32" if p.weight_dtype == "fp32" else "bf16"
    Dv, Fv, L, Np, T = v.d_model, v.d_ff, v.n_layers, v.patches, v.tokens_per_image
    M = images * Np

    def gemm(name: str, count: int, rows: Num, N: float, K: float) -> Op:
        return gemm_op(name, "prefill", count, rows, N, K, plain, act)

    qkvo = 4 * M * Dv * ab  # Q, K, V read, O written
    attention = Op(
        name="vision.attn",
        phase="prefill",
        kind="attention",
        count=L,
        flops=4.0 * images * v.n_heads * Np * Np * v.head_dim,
        weight_bytes=0.0,
        act_bytes=qkvo,
        kv_bytes=0.0,
        compute_dtype=unquantized(act),
        live_bytes=qkvo,
        shape={"batch": images, "new_tokens": float(Np), "kv_len": float(Np),
               "n_heads": v.n_heads, "n_kv_heads": v.n_heads, "head_dim": v.head_dim,
               "window": 0, "bidirectional": True},
    )  # fmt: skip
    return [
        gemm("vision.patch_embed", 1, M, Dv, v.channels * v.patch_size**2),
        _elementwise("vision.norm_attn", L, 5.0 * M * Dv, M * Dv, M * Dv, ab),
        gemm("vision.qkv_proj", L, M, 3 * Dv, Dv),
        attention,
        gemm("vision.o_proj", L, M, Dv, Dv),
        _elementwise("vision.norm_mlp", L, 5.0 * M * Dv, M * Dv, M * Dv, ab),
        gemm("vision.fc1", L, M, Fv, Dv),
        _elementwise("vision.act", L, 5.0 * M * Fv, M * Fv, M * Fv, ab),
        gemm("vision.fc2", L, M, Dv, Fv),
        _elementwise("vision.norm_final", 1, 5.0 * M * Dv, M * Dv, M * Dv, ab),
        _elementwise("vision.pool", 1, M * Dv, M * Dv, images * T * Dv, ab),
        gemm("vision.projector", 1, images * T, m.d_model, Dv),
    ]
