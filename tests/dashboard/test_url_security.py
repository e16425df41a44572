"""A shared link is untrusted: no URL parameter can make the server read a file, tell whether
one exists, or echo what one holds (issue 16, part 1). Iterates over every field the settings
module knows, the pinned baseline and every optimization parameter that names a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflens.dashboard.settings import (
    DEFAULTS,
    FIELDS,
    QUERY_NAMES,
    UPLOAD_PREFIX,
    Settings,
    baseline_from_param,
    from_query,
)
from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import files_limited_to, get_gpu, gpu_ids
from rooflens.hardware.systems import get_system
from rooflens.model.optimizations import registry
from rooflens.model.planner.workload import LengthDist
from rooflens.model.specs.presets import get_model, model_ids

SECRET = "sk-SECRET-TOKEN-123"


@pytest.fixture
def secrets(tmp_path: Path) -> dict[str, Path]:
    """Files a server must never open for a link: a YAML with a password, an HF-shaped config
    with a token, a folder holding a config.json."""
    creds = tmp_path / "creds.yaml"
    creds.write_text(yaml.safe_dump({"db_password": SECRET, "n_layers": 2}))
    config = tmp_path / "hf" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"model_type": "llama", "architectures": [SECRET]}))
    return {"yaml": creds, "json": config, "folder": config.parent}


def _path_strings(paths: dict[str, Path]) -> list[str]:
    out = []
    for p in paths.values():
        out += [str(p), UPLOAD_PREFIX + str(p), f"../../{p.name}", str(p.parent / "missing.yaml")]
    return out


def _strings_in(s: Settings) -> list[str]:
    values = [str(getattr(s, name)) for name in FIELDS]
    return values + list(s.opts)


def test_no_url_field_can_name_a_path(secrets: dict[str, Path]) -> None:
    for name, key in QUERY_NAMES.items():
        for text in _path_strings(secrets):
            settings, problems = from_query({key: [text]})
            assert settings == DEFAULTS, (name, text)
            assert problems and all(SECRET not in p for p in problems)


def test_no_optimization_parameter_in_a_link_can_name_a_path(secrets: dict[str, Path]) -> None:
    refs = [(n, k) for n, cls in registry().items() for k, p in cls.params.items() if p.preset]
    assert {("speculative", "draft"), ("distill", "student")} <= set(refs)
    for opt, key in refs:
        for text in _path_strings(secrets):
            settings, problems = from_query({QUERY_NAMES["opts"]: [f"{opt}:{key}={text}"]})
            assert settings.opts == () and problems, (opt, key, text)
    settings, problems = from_query({"opt": ["speculative:draft=llama-2-7b"]})
    assert settings.opts == ("speculative:draft=llama-2-7b",) and not problems


def test_the_baseline_can_name_no_path_in_any_field(secrets: dict[str, Path]) -> None:
    every_key = [*QUERY_NAMES.values(), "baseline", "page"]
    for key in every_key:
        for text in _path_strings(secrets):
            baseline, problems = baseline_from_param(json.dumps({key: text}))
            assert baseline is None or not any(text in v for v in _strings_in(baseline)), (
                key,
                text,
            )
            assert all(SECRET not in p for p in problems)


def test_a_server_reads_only_presets_and_uploads(secrets: dict[str, Path], tmp_path: Path) -> None:
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    allowed = uploads / "gpu.json"
    allowed.write_text(json.dumps(get_gpu("h100-sxm").model_dump()))
    with files_limited_to(uploads):
        messages = set()
        for loader in (get_model, get_gpu, get_system):
            for text in [*map(str, secrets.values()), str(secrets["yaml"].parent / "none.yaml")]:
                with pytest.raises(RooflensError) as info:
                    loader(text)
                assert SECRET not in str(info.value) and "db_password" not in str(info.value)
                messages.add(str(info.value).replace(text, "<path>"))
        # one answer whether or not the file exists: the link learns nothing about the disk
        assert len(messages) == 1
        for text in (f"file:{secrets['yaml']}", f"file:{secrets['yaml'].parent / 'none'}"):
            with pytest.raises(RooflensError, match="not a preset id or an uploaded file"):
                LengthDist.parse(text)  # the planner page's prompt/output length fields
        assert get_gpu(str(allowed)).id == "h100-sxm"
        assert get_model("llama-2-7b").id == "llama-2-7b"  # presets still load


def test_spec_errors_never_quote_the_file(secrets: dict[str, Path]) -> None:
    for path in (secrets["yaml"], secrets["json"]):
        with pytest.raises(RooflensError) as info:
            get_model(str(path))
        text = str(info.value)
        assert SECRET not in text and "db_password" not in text and "\n" not in text
        assert path.name in text  # but it names the file


def test_a_hostile_baseline_link_shows_nothing_of_the_file(app, secrets) -> None:  # type: ignore[no-untyped-def]
    at = app(baseline=json.dumps({"model": str(secrets["yaml"])}), opt=[
        f"speculative:draft={secrets['json']}"])  # fmt: skip
    assert not at.exception
    shown = " ".join(e.value for e in [*at.warning, *at.error, *at.info])
    assert SECRET not in shown and "db_password" not in shown
    assert "is not a preset" in shown


@pytest.mark.parametrize(
    "text",
    ['{"opt": [1, {"x": 2}, null]}', "[" * 100_000, '{"batch": {"a": 1}}', '"x"', "{{"],
)
def test_a_malformed_baseline_is_reported_not_raised(text: str) -> None:
    baseline, problems = baseline_from_param(text)
    assert problems and all("\n" not in p for p in problems)
    assert baseline is None or baseline.opts == ()


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.dictionaries(
        st.sampled_from([*QUERY_NAMES.values(), "baseline"]),
        st.lists(
            st.one_of(
                st.text(max_size=20),
                st.sampled_from(
                    [
                        "nan",
                        "inf",
                        "-1",
                        "/etc/passwd",
                        "upload:/etc/passwd",
                        "speculative:draft=/etc/passwd",
                        "../x.yaml",
                    ]
                ),
            ),
            min_size=1,
            max_size=3,
        ),
    )
)
def test_any_link_gives_presets_and_one_line_problems(params: dict[str, list[str]]) -> None:
    settings_, problems = from_query(params)
    if "baseline" in params:
        _, more = baseline_from_param(params["baseline"][-1])
        problems += more
    assert settings_.model in model_ids() and settings_.gpu in gpu_ids()
    assert all("\n" not in p for p in problems)
    for text in settings_.opts:
        assert "/" not in text
