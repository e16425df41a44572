"""HF config.json import: real public configs reproduce the presets; bad files fail in one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.specs.hf_import import SUPPORTED_ARCHITECTURES, from_hf_config
from rooflens.model.specs.params import count_params
from rooflens.model.specs.presets import get_model

HERE = Path(__file__).parent
# Lets `import torch_reference` (this folder's helper) work under any pytest import mode.
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

FIXTURES = HERE.parent / "fixtures"

# Fixture folder (named as the HF repo) -> the preset it must reproduce.
FIXTURE_PRESETS = {
    "Llama-2-7b-hf": "llama-2-7b",
    "Llama-2-13b-hf": "llama-2-13b",
    "Llama-2-70b-hf": "llama-2-70b",
    "CodeLlama-34b-hf": "codellama-34b",
    "Meta-Llama-3-8B": "llama-3-8b",
    "Meta-Llama-3-70B": "llama-3-70b",
    "Llama-3.1-8B": "llama-3.1-8b",
    "Llama-3.1-70B": "llama-3.1-70b",
    "Llama-3.1-405B": "llama-3.1-405b",
    "Mistral-7B-v0.1": "mistral-7b",
    "Mixtral-8x7B-v0.1": "mixtral-8x7b",
    "Mixtral-8x22B-v0.1": "mixtral-8x22b",
    "Qwen2.5-7B": "qwen2.5-7b",
    "Qwen2.5-72B": "qwen2.5-72b",
    "opt-6.7b": "opt-6.7b",
    "opt-13b": "opt-13b",
    "opt-66b": "opt-66b",
    "gpt-neox-20b": "gpt-neox-20b",
    "phi-2": "phi-2",
    "DeepSeek-V3": "deepseek-v3",
    "Qwen3-8B": "qwen3-8b",
    "Qwen3-30B-A3B": "qwen3-30b-a3b",
    "gpt-oss-20b": "gpt-oss-20b",
    "gpt-oss-120b": "gpt-oss-120b",
    "gemma-3-1b-pt": "gemma-3-1b",
    "gemma-3-4b-it": "gemma-3-4b",
    "Jamba-v0.1": "jamba-v0.1",
}
NOT_SHAPE = {"id", "name", "sources"}


def _write(tmp_path: Path, config: dict[str, Any], folder: str = "my-model") -> Path:
    path = tmp_path / folder / "config.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(config))
    return path


def _fixture(folder: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / folder / "config.json").read_text())
    return data


@pytest.mark.parametrize("folder", sorted(FIXTURE_PRESETS))
def test_config_reproduces_the_preset(folder: str) -> None:
    imported = from_hf_config(FIXTURES / folder / "config.json")
    preset = get_model(FIXTURE_PRESETS[folder])
    assert imported.model_dump(exclude=NOT_SHAPE) == preset.model_dump(exclude=NOT_SHAPE)
    assert count_params(imported).total == count_params(preset).total


def test_every_supported_architecture_has_a_fixture() -> None:
    seen = {_fixture(folder)["architectures"][0] for folder in FIXTURE_PRESETS}
    assert seen == set(SUPPORTED_ARCHITECTURES)


def test_get_model_routes_config_files_and_folders() -> None:
    by_file = get_model(str(FIXTURES / "Mixtral-8x7B-v0.1" / "config.json"))
    by_folder = get_model(str(FIXTURES / "Mixtral-8x7B-v0.1"))
    assert by_file == by_folder
    assert by_file.n_experts == 8 and by_file.experts_per_token == 2


# ---- ids and names -------------------------------------------------------------------------


def test_id_comes_from_name_or_path() -> None:
    spec = from_hf_config(FIXTURES / "Llama-2-7b-hf")  # "_name_or_path": "meta-llama/Llama-2-7b-hf"
    assert (spec.id, spec.name) == ("llama-2-7b-hf", "Llama-2-7b-hf")
    assert "config.json" in spec.sources["config"]


def test_id_falls_back_to_the_folder_name() -> None:
    spec = from_hf_config(FIXTURES / "Meta-Llama-3-70B" / "config.json")  # no _name_or_path
    assert spec.id == "meta-llama-3-70b"
    assert from_hf_config(FIXTURES / "Llama-3.1-405B").id == "llama-3.1-405b"


def test_id_from_a_hub_cache_path(tmp_path: Path) -> None:
    config = _fixture("opt-13b") | {
        "_name_or_path": "/root/.cache/huggingface/hub/models--facebook--opt-13b/snapshots/ab12"
    }
    assert from_hf_config(_write(tmp_path, config)).id == "opt-13b"


# ---- defaults and inferred fields ------------------------------------------------------------


def test_defaults_when_optional_keys_are_absent(tmp_path: Path) -> None:
    config = _fixture("Llama-2-7b-hf")
    for key in ("num_key_value_heads", "tie_word_embeddings", "_name_or_path", "architectures"):
        del config[key]  # model_type "llama" still identifies the family
    spec = from_hf_config(_write(tmp_path, config))
    assert spec.n_kv_heads == spec.n_heads == 32 and spec.attention == "mha"
    assert spec.head_dim == 4096 // 32 and not spec.tied_embeddings
    assert spec.sliding_window == 0 and spec.id == "my-model"


@pytest.mark.parametrize(("kv_heads", "kind"), [(32, "mha"), (8, "gqa"), (1, "mqa")])
def test_attention_kind_is_inferred(tmp_path: Path, kv_heads: int, kind: str) -> None:
    config = _fixture("Mistral-7B-v0.1") | {"num_key_value_heads": kv_heads}
    assert from_hf_config(_write(tmp_path, config)).attention == kind


def test_null_sliding_window_means_full_attention() -> None:
    assert from_hf_config(FIXTURES / "Mixtral-8x7B-v0.1").sliding_window == 0  # null
    assert from_hf_config(FIXTURES / "Mistral-7B-v0.1").sliding_window == 4096


def test_qwen2_window_needs_use_sliding_window(tmp_path: Path) -> None:
    config = _fixture("Qwen2.5-7B") | {"sliding_window": 4096, "max_window_layers": 0}
    assert from_hf_config(_write(tmp_path, config)).sliding_window == 0
    config["use_sliding_window"] = True
    assert from_hf_config(_write(tmp_path, config, "windowed")).sliding_window == 4096


@pytest.mark.slow
def test_explicit_head_dim_is_kept(tmp_path: Path) -> None:
    # Mistral-NeMo-Base-2407 config: 32 heads of 128 on hidden_size 5120 (q width 4096 ≠ d).
    config = _fixture("Mistral-7B-v0.1") | {
        "hidden_size": 5120,
        "head_dim": 128,
        "num_hidden_layers": 40,
        "vocab_size": 131072,
        "max_position_embeddings": 1024000,
        "sliding_window": None,
    }
    spec = from_hf_config(_write(tmp_path, config))
    assert spec.head_dim == 128 and spec.q_dim == 4096
    pytest.importorskip("torch", reason="torch is needed for the meta-device second route")
    from torch_reference import reference_param_count

    assert reference_param_count(spec) == count_params(spec).total


def test_opt_ties_embeddings_by_default_and_offsets_positions() -> None:
    spec = from_hf_config(FIXTURES / "opt-13b")  # no tie_word_embeddings key
    assert spec.tied_embeddings and spec.positional == "learned"
    assert spec.max_position_embeddings == 2048 + 2


def test_neox_without_parallel_residual(tmp_path: Path) -> None:
    config = _fixture("gpt-neox-20b") | {"use_parallel_residual": False}
    spec = from_hf_config(_write(tmp_path, config))
    assert not spec.parallel_block
    assert count_params(spec).total == 20_554_567_680  # same weights, sequential dataflow


def test_deepseek_mla_fields() -> None:
    spec = from_hf_config(FIXTURES / "DeepSeek-V3")
    assert spec.attention == "mla" and spec.head_dim == 192 and spec.v_head_dim == 128
    assert (spec.q_lora_rank, spec.kv_lora_rank, spec.qk_rope_head_dim) == (1536, 512, 64)
    assert (spec.first_dense_layers, spec.n_shared_experts, spec.d_ff_expert) == (3, 1, 2048)


# ---- errors: one line, naming the file and the key ------------------------------------------


def _error(path: Path) -> str:
    with pytest.raises(RooflensError) as info:
        from_hf_config(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_unsupported_architecture_lists_the_supported_ones(tmp_path: Path) -> None:
    path = _write(tmp_path, {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"})
    message = _error(path)
    assert "GPT2LMHeadModel" in message and str(path) in message
    assert all(arch in message for arch in SUPPORTED_ARCHITECTURES)


def test_unknown_model_type_without_architectures(tmp_path: Path) -> None:
    message = _error(_write(tmp_path, {"model_type": "mamba"}))
    assert "mamba" in message and "LlamaForCausalLM" in message


def test_malformed_json_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken" / "config.json"
    path.parent.mkdir()
    path.write_text('{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,,}')
    message = _error(path)
    assert str(path) in message and "cannot parse" in message


def test_missing_required_key_names_file_and_key(tmp_path: Path) -> None:
    config = _fixture("Meta-Llama-3-8B")
    del config["intermediate_size"]
    path = _write(tmp_path, config)
    message = _error(path)
    assert str(path) in message and "'intermediate_size'" in message and "missing" in message


@pytest.mark.parametrize(
    ("key", "value"),
    [("num_hidden_layers", "32"), ("num_attention_heads", 0), ("hidden_act", ["gelu"])],
)
def test_bad_value_is_named(tmp_path: Path, key: str, value: Any) -> None:
    config = _fixture("phi-2") | {key: value}
    assert f"'{key}'" in _error(_write(tmp_path, config))


def test_missing_file_and_non_mapping(tmp_path: Path) -> None:
    assert "not found" in _error(tmp_path / "nowhere" / "config.json")
    path = tmp_path / "list" / "config.json"
    path.parent.mkdir()
    path.write_text("[1, 2]")
    assert "mapping" in _error(path)


def test_opt_350m_projection_is_refused() -> None:
    # OPT-350m embeds at word_embed_proj_dim 512 and projects to hidden_size 1024.
    message = _error(FIXTURES / "opt-350m")
    assert "word_embed_proj_dim" in message and "512" in message and "1024" in message


def test_spec_validation_errors_stay_one_line(tmp_path: Path) -> None:
    config = _fixture("Meta-Llama-3-8B") | {"num_key_value_heads": 5}  # does not divide 32
    message = _error(_write(tmp_path, config))
    assert "n_kv_heads" in message
