"""Which of a profile's terms price an op (hardware/profiles.py holds them, model/pricing/
roofline.py applies them): its kind, kernel family and phase."""

from __future__ import annotations

import numpy as np

from rooflens.hardware.profiles import KindEfficiency, Profile
from rooflens.model.ops.op import Op


def kind_terms(profile: Profile, op: Op) -> KindEfficiency:
    """The profile's terms for one op: those under its `kind_key`."""
    return profile.kind(kind_key(profile, op))


def kind_key(profile: Profile, op: Op) -> str:
    """The key of the profile's terms that price one op. Decode-shaped attention (one new token
    per sequence: flash-decoding kernels) takes `attention_decode` when the profile has it;
    prefill, chunked prefill and verification (T > 1, or a mixed grid) take `attention`. A fused
    MoE layer's routed experts (a `gemm` with `experts_read`, model/ops/moe.py: a grouped GEMM
    over ragged per-expert batches) take `moe`; a quantized matmul its kernel family's key
    (`gemm:fp8`, `moe:int4_wo`, model/specs/quant.py), and so does FP8 attention or attention
    over an fp8 cache (`attention:fp8`, `attention_decode:kv_fp8`); each where the profile has
    it."""
    kinds, shape = profile.kinds, op.shape
    if op.kind == "gemm":
        family = shape.get("family")
        keys = (f"moe:{family}", "moe") if "experts_read" in shape else ()
        return next((key for key in (*keys, f"gemm:{family}") if key in kinds), "gemm")
    if op.kind == "attention":
        new_tokens = shape.get("new_tokens")
        decode = new_tokens is not None and bool(np.all(np.asarray(new_tokens) <= 1))
        bases = ("attention_decode", "attention") if decode else ("attention",)
        family = shape.get("decode_family" if decode else "family")
        candidates = [k for b in bases for k in (f"{b}:{family}", b)]
        return next((key for key in candidates if key in kinds), "attention")
    return op.kind
