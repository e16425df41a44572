"""Hugging Face configs as untrusted input (issue 27 §2, §5): an absurd depth is refused before
any per-layer loop (each case ends in well under a second), and no refusal echoes a string of
the file: it names the key and the form it expects."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.specs.hf_import import from_hf_config

FIXTURES = Path(__file__).parent / "fixtures"
SECRET = "hf_SeCrEtToKeN_0123456789"


def config(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name / "config.json").read_text())


def refused(tmp_path: Path, data: dict[str, Any]) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    start = time.perf_counter()
    with pytest.raises(RooflensError) as info:
        from_hf_config(path)
    assert time.perf_counter() - start < 1.0
    message = str(info.value)
    assert "\n" not in message and SECRET not in message and "hunter2" not in message
    return message


@pytest.mark.parametrize(
    ("fixture", "where"),
    [
        ("Qwen3-30B-A3B", None),
        ("Qwen3-8B", None),
        ("gemma-3-1b-pt", None),
        ("gemma-3-4b-it", "text_config"),
        ("gemma-3-4b-it", "vision_config"),
        ("Jamba-v0.1", None),
        ("DeepSeek-V3", None),
    ],
)
def test_absurd_depth_is_refused_at_once(tmp_path: Path, fixture: str, where: str | None) -> None:
    data = config(fixture)
    (data[where] if where else data)["num_hidden_layers"] = 10**12
    assert "num_hidden_layers" in refused(tmp_path, data)


@pytest.mark.parametrize(
    ("fixture", "key", "value"),
    [
        ("gpt-oss-20b", "layer_types", SECRET),
        ("gpt-oss-20b", "layer_types", [SECRET] * 24),
        ("Qwen3-30B-A3B", "mlp_only_layers", ["password=hunter2"]),
        ("gemma-3-1b-pt", "layer_types", [SECRET] * 26),
        ("Llama-2-7b-hf", "hidden_act", SECRET),
    ],
)
def test_refusals_name_the_key_not_the_value(tmp_path: Path, fixture: str, key: str,
                                             value: object) -> None:  # fmt: skip
    data = config(fixture) | {key: value}
    assert key in refused(tmp_path, data)


def test_gemma3_without_vision_config_names_it(tmp_path: Path) -> None:
    data = config("gemma-3-4b-it")
    del data["vision_config"]
    message = refused(tmp_path, data)
    assert "vision_config" in message and "hidden_size" not in message  # not the text_config
