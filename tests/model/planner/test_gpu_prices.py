"""GPU prices (model/planner/gpu_prices.py): $ per million tokens as a closed form, every listed
price sourced and positive, user prices win over the list, and bad prices are one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import gpu_ids
from rooflens.model.planner.gpu_prices import (
    default_prices,
    parse_price,
    price_per_gpu_hour,
    read_price_file,
    usd_per_million_tokens,
)


def test_usd_per_million_tokens_closed_form() -> None:
    # $3.60/h producing 1000 tokens/s: 3.6 M tokens cost $3.60, so $1 per million tokens
    assert usd_per_million_tokens(3.6, 1000.0) == pytest.approx(1.0)
    rates = np.array([500.0, 2000.0])
    assert usd_per_million_tokens(3.6, rates) == pytest.approx([2.0, 0.5])


def test_every_listed_price_is_sourced_positive_and_a_known_gpu() -> None:
    prices = default_prices()
    assert prices and set(prices) <= set(gpu_ids())
    for gpu, entry in prices.items():
        assert entry["usd_per_hour"] > 0 and str(entry["source"]).strip(), gpu


def test_a_user_price_wins_and_a_missing_one_names_the_fix() -> None:
    assert price_per_gpu_hour("h100-sxm", {"h100-sxm": 1.25}) == (1.25, "user")
    listed, source = price_per_gpu_hour("h100-sxm", {})
    assert listed == default_prices()["h100-sxm"]["usd_per_hour"] and source != "user"
    unlisted = next((g for g in gpu_ids() if g not in default_prices()), None)
    if unlisted is not None:
        with pytest.raises(RooflensError, match=f"--price {unlisted}=USD_PER_HOUR"):
            price_per_gpu_hour(unlisted, {})


def test_prices_from_flags_and_files(tmp_path: Path) -> None:
    assert parse_price(" a100-sxm-80gb = 1.5") == ("a100-sxm-80gb", 1.5)
    for text, match in (("h100-sxm", "expected GPU=USD_PER_HOUR"),
                        ("h100-sxm=free", "is not a number"),
                        ("h100-sxm=-1", "finite number > 0")):  # fmt: skip
        with pytest.raises(RooflensError, match=match):
            parse_price(text)
    path = tmp_path / "prices.yaml"
    path.write_text("h100-sxm: 2.0\nl4: {usd_per_hour: 0.5, source: mine}\n")
    assert read_price_file(str(path)) == {"h100-sxm": 2.0, "l4": 0.5}
