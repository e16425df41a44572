"""Typed access to a config.json (model/specs/hf_config.py): integers and booleans checked with
one-line errors naming the key, activation names mapped, and per-layer attention kinds read from
`layer_types` (all-full is the uniform model; unknown kinds and wrong lengths are refused)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.specs.hf_config import Config, attention_kind, layer_types


def _cfg(**data: Any) -> Config:
    return Config(data, Path("m/config.json"), "TestForCausalLM")


def test_layer_types_map_hf_kinds_and_a_uniform_model_has_none() -> None:
    kinds = ["sliding_attention", "full_attention"] * 2
    assert layer_types(_cfg(layer_types=kinds), 4) == ("sliding", "full", "sliding", "full")
    assert layer_types(_cfg(layer_types=["full_attention"] * 3), 3) == ()
    assert layer_types(_cfg(), 3) == ()  # absent: every layer alike


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (["full_attention"] * 2, "is not a list of 3"),
        (["full_attention", "linear", "x"], "layer kind"),
    ],
)
def test_bad_layer_types_are_one_line_naming_the_key(raw: list[str], why: str) -> None:
    with pytest.raises(RooflensError, match=why) as err:
        layer_types(_cfg(layer_types=raw), 3)
    assert "'layer_types'" in str(err.value) and "\n" not in str(err.value)


def test_integers_and_booleans_are_checked() -> None:
    cfg = _cfg(n=4, flag=True, bad=True, neg=-1)
    assert cfg.get_int("n") == 4 and cfg.get_int("absent", 7) == 7
    assert cfg.get_bool("flag", False) is True and cfg.get_bool("absent", True) is True
    for key, match in (("bad", "must be an integer"), ("neg", "at least 0"),
                       ("absent", "is missing")):  # fmt: skip
        with pytest.raises(RooflensError, match=match):
            cfg.get_int(key)


def test_activations_map_onto_the_specs_names() -> None:
    assert _cfg(act="swish").activation("act", "silu") == "silu"
    assert _cfg(act="gelu_pytorch_tanh").activation("act", "silu") == "gelu"
    with pytest.raises(RooflensError, match="unsupported activation"):
        _cfg(act="mish").activation("act", "silu")


def test_attention_kind_follows_the_kv_heads() -> None:
    # MHA: one KV head per query head; MQA: one; GQA: in between
    assert [attention_kind(32, k) for k in (32, 1, 8)] == ["mha", "mqa", "gqa"]
