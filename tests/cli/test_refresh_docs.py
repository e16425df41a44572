"""scripts/refresh_docs.py rewrites each `$ rooflens` example with what the CLI prints now, but
never writes a broken example's error as its output: an example naming a file that is not
there (the README once showed `error: file not found` for the tiny Llama's moved spec) is left
as it was and named."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import refresh_docs  # noqa: E402


def test_an_example_naming_a_missing_file_is_left_alone_and_named(capsys):
    stale = "```\n$ rooflens predict --model no/such/spec.yaml --gpu h100-sxm\nold output\n```\n"
    text, changed = refresh_docs.refresh(stale)
    assert (text, changed) == (stale, 0)
    assert "left alone (names a missing file): rooflens predict --model no/such" in (
        capsys.readouterr().err
    )


def test_a_working_example_is_rewritten_with_the_current_output():
    example = "```\n$ rooflens predict --model llama-3-70b --gpu a100-sxm-80gb\nold output\n```\n"
    text, changed = refresh_docs.refresh(example)  # an error the README shows on purpose
    assert changed == 1
    assert "error: llama-3-70b needs 143 GB per GPU on a100-sxm-80gb" in text
    assert "old output" not in text
