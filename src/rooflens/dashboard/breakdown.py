"""Where a step's time goes, by operator class: prefill and one decode step split into weights
GEMM, attention, norms/elementwise, communication and kernel launch floors, each with what
bounds it.

Pure (no Streamlit): the Explore page and its HTML report draw it. The split is a regrouping of
the priced operator table (`PricedOp`), so the classes add up to the step time exactly:
the launch floors are each call's fixed time (model/pricing/roofline.py `launch_floor_s`: the
profile's
per-launch floor × the kernels a call launches, zero under `ideal`), taken out of each kernel's
row; the rest of each row goes to the class of its kind. Host overhead of eager execution (the
CPU issuing kernels, model/pricing/host.py) is not in a graph-captured serving step; under
`--opt eager-launch` the step's exposed host time is a `host` row and its own class, "host
overhead" (bound `host`), beside the per-kernel launch floors a captured graph still pays.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooflens.hardware.profiles import get_profile
from rooflens.model.predict.steps import Prediction
from rooflens.model.pricing.roofline import PricedOp, launch_floor_s

CLASSES = ("weights GEMM", "attention", "norms/elementwise", "communication", "launch floors",
           "host overhead")  # fmt: skip
CLASS_OF_KIND = {"gemm": "weights GEMM", "attention": "attention", "norm": "norms/elementwise",
                 "elementwise": "norms/elementwise", "embedding": "norms/elementwise",
                 "comm": "communication", "host": "host overhead"}  # fmt: skip
HOST = "launch floors"
HOST_BOUND = "launch"  # launch latency: neither the SMs nor HBM nor the links are the limit


def _split(priced: list[PricedOp], pred: Prediction) -> dict[str, dict[str, float]]:
    """class -> {bound -> seconds per step}."""
    sc = pred.scenario
    profile = get_profile(sc.profile, sc.gpu, sc.engine)
    out: dict[str, dict[str, float]] = {c: {} for c in CLASSES}
    for p in priced:
        total = float(np.mean(p.total_s))
        host = 0.0
        if p.op.kind not in ("comm", "host") and total > 0:
            floor = float(np.mean(launch_floor_s(p.op, profile, sc.gpu)))
            host = min(total, floor * p.op.count)
        cls = CLASS_OF_KIND.get(p.op.kind, "norms/elementwise")
        bins = out[cls]
        bins[p.bound] = bins.get(p.bound, 0.0) + total - host
        if host:
            out[HOST][HOST_BOUND] = out[HOST].get(HOST_BOUND, 0.0) + host
    return out


def time_breakdown(pred: Prediction) -> pd.DataFrame:
    """Rows (phase, class, time_s, share, bound) for prefill and one decode step, in CLASSES
    order; `bound` is what bounds most of the class's time; `share` is of the phase's step."""
    rows = []
    phases = (("prefill", pred.prefill.priced), ("decode", pred.decode.priced))
    for phase, priced in phases:
        split = _split(priced, pred)
        step = sum(sum(b.values()) for b in split.values())
        for cls in CLASSES:
            bins = split[cls]
            time_s = sum(bins.values())
            bound = max(bins, key=lambda k: bins[k]) if bins else ""
            rows.append({"phase": phase, "class": cls, "time_s": time_s,
                         "share": time_s / step if step else 0.0, "bound": bound})  # fmt: skip
    return pd.DataFrame(rows)
