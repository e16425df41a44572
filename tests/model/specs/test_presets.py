"""Model presets: every file loads, every number is sourced, totals match the published ones."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from rooflens.model.specs.params import count_params
from rooflens.model.specs.presets import PRESET_DIR, get_model, model_ids

PRESET_FILES = sorted(PRESET_DIR.glob("*.yaml"))

REQUIRED_IDS = [
    "gpt3-175b", "opt-13b", "opt-66b", "llama-2-7b", "llama-2-13b", "llama-2-70b",
    "llama-3-8b", "llama-3-70b", "llama-3.1-405b", "mistral-7b", "mixtral-8x7b",
    "mixtral-8x22b", "codellama-34b", "qwen2.5-72b", "phi-2", "deepseek-v3",
]  # fmt: skip

# (published total, relative tolerance, source). The tolerance is what the published rounding
# needs, stated per model; the exact count is in the comment.
PUBLISHED_TOTALS: dict[str, tuple[float, float, str]] = {
    # 174,604,259,328: the paper's 175.0B rounds up (embeddings + 96 layers of 12d²+13d).
    "gpt3-175b": (175.0e9, 0.005, "Brown et al. 2020, Table 2.1"),
    # 6,658,473,984 / 12,853,473,280 / 65,719,701,504: OPT names sizes to 2 digits.
    "opt-6.7b": (6.7e9, 0.01, "Zhang et al. 2022 (OPT), Table 1"),
    "opt-13b": (13e9, 0.015, "Zhang et al. 2022 (OPT), Table 1"),
    "opt-66b": (66e9, 0.005, "Zhang et al. 2022 (OPT), Table 1"),
    "llama-2-7b": (6.74e9, 0.001, "Llama 2 model card; rooflens anchors E9"),
    "llama-2-13b": (13e9, 0.002, "Llama 2 model card"),
    "llama-2-70b": (68.98e9, 0.001, "Llama 2 model card; rooflens anchors E9"),
    "codellama-34b": (34e9, 0.01, "Code Llama model card"),  # 33,743,970,304
    "llama-3-8b": (8e9, 0.005, "Llama 3 model card"),  # 8,030,261,248
    "llama-3-70b": (70e9, 0.01, "Llama 3 model card"),  # 70,553,706,496
    "llama-3.1-8b": (8e9, 0.005, "Llama 3.1 model card"),
    "llama-3.1-70b": (70e9, 0.01, "Llama 3.1 model card"),
    "llama-3.1-405b": (405e9, 0.005, "Dubey et al. 2024, Table 3"),  # 405,853,388,800
    "mistral-7b": (7.3e9, 0.01, "Mistral AI, 'Mistral 7B' announcement"),  # 7,241,732,096
    "mixtral-8x7b": (46.7e9, 0.001, "Mistral AI, 'Mixtral of experts'; anchors E9"),
    "mixtral-8x22b": (141e9, 0.005, "Mistral AI, 'Cheaper, Better, Faster, Stronger'"),
    "qwen2.5-7b": (7.61e9, 0.001, "Qwen2.5-7B model card"),  # 7,615,616,512
    "qwen2.5-72b": (72.7e9, 0.001, "Qwen2.5-72B model card"),  # 72,706,203,648
    # 2,779,683,840: the card's "2.7 billion" truncates 2.78B.
    "phi-2": (2.7e9, 0.03, "Phi-2 model card"),
    "gpt-neox-20b": (20_554_567_680, 0.0, "GPT-NeoX-20B model card, n_parameters (exact)"),
    "deepseek-v3": (671e9, 0.001, "DeepSeek-V3 report, abstract (MTP module excluded)"),
    "qwen3-8b": (8.2e9, 0.005, "Qwen3-8B model card"),  # 8,190,735,360
    "qwen3-30b-a3b": (30.5e9, 0.002, "Qwen3-30B-A3B model card"),  # 30,532,122,624
    "gpt-oss-20b": (20.91e9, 0.001, "gpt-oss model card, table 1"),  # 20,914,757,184
    "gpt-oss-120b": (116.83e9, 0.0005, "gpt-oss model card, table 1"),  # 116,829,156,672
    # 999,885,952 = 301,989,888 embedding + 697,896,064 non-embedding (report: 302M + 698M)
    "gemma-3-1b": (1.0e9, 0.001, "Gemma 3 report, table 1"),
    # 4,300,079,472: 417M vision + 675M embedding (projector included) + 3,209M non-embedding
    "gemma-3-4b": (4.301e9, 0.001, "Gemma 3 report, table 1 (sum of its three columns)"),
    "jamba-v0.1": (52e9, 0.01, "Jamba paper, abstract"),  # 51,570,323,328
}

# Active parameters per token of the MoE presets.
PUBLISHED_ACTIVE: dict[str, tuple[float, float, str]] = {
    "mixtral-8x7b": (12.9e9, 0.002, "Mistral AI, 'Mixtral of experts'; anchors E9"),
    "mixtral-8x22b": (39e9, 0.005, "Mistral AI, 'Cheaper, Better, Faster, Stronger'"),
    # 37,552,297,472 with both embedding matrices counted; the report's "37B" rounds down.
    "deepseek-v3": (37e9, 0.02, "DeepSeek-V3 report, abstract"),
    "qwen3-30b-a3b": (3.3e9, 0.02, "Qwen3-30B-A3B model card"),  # 3,353,032,704
    "jamba-v0.1": (12e9, 0.01, "Jamba paper, abstract"),  # 12,110,311,296
}


def test_required_presets_exist() -> None:
    assert set(REQUIRED_IDS) <= set(model_ids())


def test_every_preset_has_a_published_total() -> None:
    assert set(model_ids()) == set(PUBLISHED_TOTALS)


@pytest.mark.parametrize("path", PRESET_FILES, ids=lambda p: p.stem)
def test_preset_file_loads_under_its_own_id(path: Path) -> None:
    spec = get_model(path.stem)
    assert spec.id == path.stem
    assert spec.id == spec.id.lower() and " " not in spec.id


@pytest.mark.parametrize("path", PRESET_FILES, ids=lambda p: p.stem)
def test_every_number_in_a_preset_has_a_source(path: Path) -> None:
    raw = yaml.safe_load(path.read_text())
    numbers = {k for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool)}
    sources = raw["sources"]
    assert numbers - set(sources) == set(), "numbers without a source"
    for key in ("config", "architecture", "total_params"):
        assert sources.get(key), f"sources.{key} missing"


@pytest.mark.parametrize("model_id", sorted(PUBLISHED_TOTALS))
def test_total_matches_published(model_id: str) -> None:
    published, rel_tol, source = PUBLISHED_TOTALS[model_id]
    total = count_params(get_model(model_id)).total
    assert math.isclose(total, published, rel_tol=rel_tol), f"{total:,} vs {source}"


@pytest.mark.parametrize("model_id", sorted(PUBLISHED_ACTIVE))
def test_active_matches_published(model_id: str) -> None:
    published, rel_tol, source = PUBLISHED_ACTIVE[model_id]
    active = count_params(get_model(model_id)).active
    assert math.isclose(active, published, rel_tol=rel_tol), f"{active:,} vs {source}"


def test_e9_parameter_counts_to_published_rounding() -> None:
    # anchors E9 (model cards): Llama-2-7B 6.74e9; Llama-2-70B 68.98e9;
    # Mixtral-8x7B 46.7e9 total, 12.9e9 active per token. Exact to the published digits.
    assert round(count_params(get_model("llama-2-7b")).total / 1e9, 2) == 6.74
    assert round(count_params(get_model("llama-2-70b")).total / 1e9, 2) == 68.98
    mixtral = count_params(get_model("mixtral-8x7b"))
    assert round(mixtral.total / 1e9, 1) == 46.7
    assert round(mixtral.active / 1e9, 1) == 12.9


def test_deepseek_v3_active_is_about_37b_of_671b() -> None:
    # DeepSeek-V3 report abstract: 671B total, 37B activated per token (MTP module excluded).
    counts = count_params(get_model("deepseek-v3"))
    assert round(counts.total / 1e9) == 671
    assert 36.5e9 < counts.active < 38e9


@pytest.mark.parametrize("model_id", ["opt-6.7b", "opt-13b", "opt-66b"])
def test_opt_position_table_has_two_extra_rows(model_id: str) -> None:
    # HF OPTLearnedPositionalEmbedding: num_embeddings = max_position_embeddings + offset 2.
    spec = get_model(model_id)
    assert spec.max_position_embeddings == spec.max_context + 2 == 2050


def test_headline_shapes() -> None:
    # The brief's reference values, straight from the configs / papers.
    llama3 = get_model("llama-3-70b")
    assert (llama3.n_layers, llama3.d_model, llama3.n_heads, llama3.n_kv_heads) == (80, 8192, 64, 8)
    assert (llama3.d_ff, llama3.vocab_size) == (28672, 128256)
    gpt3 = get_model("gpt3-175b")
    assert (gpt3.n_layers, gpt3.d_model, gpt3.n_heads, gpt3.d_ff) == (96, 12288, 96, 49152)
    assert gpt3.tied_embeddings and gpt3.linear_bias and gpt3.positional == "learned"
    assert get_model("mistral-7b").sliding_window == 4096
    dsv3 = get_model("deepseek-v3")
    assert dsv3.head_dim == 128 + 64 and dsv3.value_head_dim == 128
    assert dsv3.kv_cache_elements_per_token_per_layer == 512 + 64
