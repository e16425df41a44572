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


def _main(monkeypatch, *argv: str) -> int:
    """The script's `main` as the shell runs it with `argv`."""
    monkeypatch.setattr(sys, "argv", ["refresh_docs", *argv])
    return refresh_docs.main()


def test_each_skip_leaves_its_blocks_and_the_rest_are_rewritten(tmp_path, monkeypatch):
    # `--skip` repeats: a block any of them matches keeps its output
    blocks = [f"```\n$ rooflens {cmd}\nold output\n```\n" for cmd in
              ("gpus --json", "models --json",
               "predict --model llama-3-70b --gpu a100-sxm-80gb")]  # fmt: skip
    doc = tmp_path / "doc.md"
    doc.write_text("".join(blocks))
    assert _main(monkeypatch, "--skip", "gpus", "--skip", "models", str(doc)) == 0
    text = doc.read_text()
    assert text.startswith(blocks[0] + blocks[1])  # both skipped blocks as they were
    assert text.count("old output") == 2  # the third was re-run
    assert "error: llama-3-70b needs 143 GB per GPU on a100-sxm-80gb" in text


def test_an_example_timed_on_this_cpu_runs_only_with_timed(tmp_path, monkeypatch, capsys):
    # `--device cpu` examples print this machine's timings (and `validate run` stores a file):
    # left alone unless asked. This one does not parse, so running it names it on stderr.
    block = "```\n$ rooflens gpus --device cpu\nold output\n```\n"
    doc = tmp_path / "doc.md"
    doc.write_text(block)
    assert _main(monkeypatch, str(doc)) == 0
    assert doc.read_text() == block
    assert "left alone" not in capsys.readouterr().err  # skipped before it ran
    assert _main(monkeypatch, "--timed", str(doc)) == 0
    assert "left alone (does not parse): rooflens gpus --device cpu" in capsys.readouterr().err
