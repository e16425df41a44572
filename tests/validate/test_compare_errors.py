"""compare.join / summarize on hand-made rows with known errors and cache effects."""

from __future__ import annotations

import pandas as pd
import pytest

from rooflens.validate.compare import band_check, join, summarize

# A100: 312 TFLOP/s bf16, 2.039 TB/s, 40 MiB L2.
GEMM = {"op": "gemm", "dtype": "bf16", "gpu": "a100-sxm-80gb", "impl": "t", "source": "t"}


def _ideal(m: int, n: int, k: int) -> float:
    return max(2 * m * n * k / 312e12, 2 * (m * k + n * k + m * n) / 2.039e12)


def test_errors_and_cache_effects_are_classified():
    big, small = (8192, 8192, 8192), (1, 1024, 1024)  # 402 MB vs 2 MB (fits in L2)
    rows = pd.DataFrame([
        {**GEMM, "m": big[0], "n": big[1], "k": big[2], "measured_s": 2 * _ideal(*big)},
        {**GEMM, "m": small[0], "n": small[1], "k": small[2], "measured_s": 0.5 * _ideal(*small)},
        {**GEMM, "m": 1, "n": 65536, "k": 16384, "measured_s": 0.5 * _ideal(1, 65536, 16384)},
    ])  # fmt: skip
    joined = join(rows, ("ideal",))
    assert joined.loc[0, "error_ideal"] == pytest.approx(-0.5)
    assert list(joined["below_ideal"]) == [False, True, True]
    # 2 MB can come from L2: a cache effect. 2 GB cannot: the ideal under-predicts it.
    assert list(joined["cache_effect"]) == [False, True, False]
    assert list(joined["ideal_under"]) == [False, False, True]
    summary = summarize(joined, ("gpu",), ("ideal",)).iloc[0]
    assert summary["excluded_cache"] == 1
    assert summary["ideal_under_share"] == pytest.approx(1 / 3)
    assert summary["ideal_median"] == pytest.approx(0.5)  # only the kept row


def test_band_check_flags_a_wrong_spec():
    joined = pd.DataFrame({"measured_s": [1.0, 1.5, 2.0], "predicted_ideal_s": [1.0, 1.0, 1.0]})
    assert band_check(joined)[0]
    too_fast = joined.assign(predicted_ideal_s=[10.0, 10.0, 10.0])  # spec 10x too slow
    assert not band_check(too_fast)[0]
    too_slow = joined.assign(predicted_ideal_s=[0.01, 0.01, 0.01])  # spec 100x too fast
    assert not band_check(too_slow)[0]
