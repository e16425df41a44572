"""A GEMM engine's m = 1 path (model/pricing/roofline.py's S): a call whose input is one row
runs a path of its own, measured slower than two rows (vLLM 0.24's per-tensor FP8 on the B300:
+13.3 µs a call at every shape). Its cycles are fitted per engine and kernel family
(hardware/profiles.py `single_row_cycles`; validate/single_row_fit.py says how and where)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from rooflens.hardware.profiles import KindEfficiency, Profile
from rooflens.hardware.spec import GPUSpec
from rooflens.model.ops.op import Num, Op
from rooflens.model.pricing.kinds import kind_key, kind_terms


def single_row_s(op: Op, eff: KindEfficiency, gpu: GPUSpec) -> Num:
    """S: a GEMM call's extra time where its input is one row (m = 1, one head): the engine's
    m = 1 path, single_row_cycles at the GPU's clock (zero elsewhere and under `ideal`)."""
    if not eff.single_row_cycles or op.kind != "gemm" or op.shape.get("heads", 1) != 1:
        return 0.0
    one = np.asarray(op.shape.get("m", 0)) == 1
    if not np.any(one):
        return 0.0
    extra = eff.single_row_cycles / gpu.clock_hz()
    return extra if np.all(one) else np.where(one, extra, 0.0)


def single_row_paths(
    ops: Iterable[Op], profile: Profile, gpu: GPUSpec
) -> dict[str, tuple[float, float]]:
    """Per profile key whose one-row GEMM calls pay an engine's m = 1 path: its seconds a call
    and the calls of `ops` (one step's) that pay it."""
    out: dict[str, tuple[float, float]] = {}
    for op in ops:
        extra = float(np.max(single_row_s(op, kind_terms(profile, op), gpu)))
        if extra > 0:
            key = kind_key(profile, op)
            out[key] = (extra, out.get(key, (0.0, 0.0))[1] + float(op.count))
    return out
