"""Length distributions and SLO parsing: the lognormal fit reproduces its mean and p99."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.planner.workload import LengthDist, ServingWorkload


def test_lognormal_fit_reproduces_mean_and_p99() -> None:
    d = LengthDist.parse("1000", p99=4000)
    assert d.kind == "lognormal"
    draws = d.sample(np.random.default_rng(0), 400_000, cap=10**9)
    assert np.mean(draws) == pytest.approx(1000, rel=0.01)
    assert np.percentile(draws, 99) == pytest.approx(4000, rel=0.03)
    # the quantile points the analytical model averages over agree with the draws
    assert d.mean(256) == pytest.approx(np.mean(draws), rel=0.02)


def test_parse_forms() -> None:
    assert LengthDist.parse("512").points(4).tolist() == [512.0] * 4
    assert LengthDist.parse("lognormal:mean=300,p99=900").p99() == 900
    with pytest.raises(RooflensError, match="lognormal"):
        LengthDist.parse("100", p99=5000)  # p99/mean = 50: no lognormal has that
    with pytest.raises(RooflensError, match="cannot read length"):
        LengthDist.parse("lots")


def test_empirical_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "lengths.csv"
    path.write_text("tokens\n10\n20\n30\n40\n")
    d = LengthDist.parse(f"file:{path}")
    assert d.mean(4) == 25.0


def test_kv_length_is_length_biased() -> None:
    fixed = ServingWorkload(rate_per_s=1, prompt=LengthDist.parse("1000"),
                            output=LengthDist.parse("200"))  # fmt: skip
    assert fixed.kv_len_mean_tokens() == 1000 + 200 / 2  # predict's mean decode KV length
    spread = ServingWorkload(rate_per_s=1, prompt=LengthDist.parse("1000"),
                             output=LengthDist.parse("200", p99=800))  # fmt: skip
    o = spread.output.points()
    assert spread.kv_len_mean_tokens() == pytest.approx(1000 + (o**2).mean() / (2 * o.mean()))
    assert spread.kv_len_mean_tokens() > fixed.kv_len_mean_tokens()
