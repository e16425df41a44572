"""Whether each row of an operator table re-prices from its kernel call (`Op.call`) to its own
seconds through `kernels predict`'s path (model/pricing/kernel_table.py). The default stack's rows
all do (tests/model/pricing/test_reprice.py); a transform that changes the kernel beyond what
its call's columns say (fusion, sparsity, a quantization scheme's zero points) keeps the call
of the kernel it started from, and its rows say so (`call_exact` in `predict --json`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooflens.hardware.profiles import Profile
from rooflens.hardware.spec import SystemSpec
from rooflens.model.pricing.kernel_table import predict_frame
from rooflens.model.pricing.roofline import PricedOp

REL_TOL = 1e-9


def call_exact(priced: list[PricedOp], system: SystemSpec, profile: Profile) -> list[bool]:
    """Per priced op: does its call, priced alone at every grid point, give its seconds?"""
    frames, wanted = [], {}
    for i, p in enumerate(priced):
        numbers = {k: np.asarray(v) for k, v in p.op.call.items() if not isinstance(v, str)}
        try:
            shape = np.broadcast_shapes(np.shape(p.total_s), *(v.shape for v in numbers.values()))
        except ValueError:  # a call whose cells do not span the op's grid
            continue
        if not p.op.call:
            continue
        cells = {k: np.broadcast_to(v, shape).ravel() for k, v in numbers.items()}
        strings = {k: v for k, v in p.op.call.items() if isinstance(v, str)}
        wanted[i] = np.broadcast_to(np.asarray(p.total_s, dtype=np.float64), shape).ravel()
        frames.append(pd.DataFrame({**cells, **strings}, index=range(wanted[i].size)))
    exact = [False] * len(priced)
    if not frames:
        return exact
    table = pd.concat(frames, ignore_index=True)
    # the op table's own rows: a step's element and byte counts pass a user's int32 limits
    priced_calls = predict_frame(table, system.gpu, profile, system=system, internal=True)
    seconds = priced_calls["predicted_s"].to_numpy()
    start = 0
    for i, want in wanted.items():
        mine = seconds[start : start + want.size] * priced[i].op.count
        exact[i] = bool(np.allclose(mine, want, rtol=REL_TOL, atol=0.0))
        start += want.size
    return exact
