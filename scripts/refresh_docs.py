"""Re-run every `$ rooflens …` example in README.md and docs/*.md and rewrite its output, so the
documentation shows what the current code prints.

An example is a fenced block whose first line starts with `$ rooflens`; continuation lines end
with a backslash; a trailing `  # comment` is not run; a trailing `| grep -E PATTERN` filters
the output; a block whose command does not parse (a placeholder such as `[--opt ...]`) is left
alone and named, never rewritten with the argparse error. Blocks with several commands are re-run
command by command. Output is captured at a fixed terminal width (COLUMNS=130) so tables
render the same everywhere.

    python scripts/refresh_docs.py            # rewrite in place
    python scripts/refresh_docs.py --check    # exit 1 if any example's output changed or failed
    python scripts/refresh_docs.py --skip "validate cv" --skip "plan"   # leave blocks whose
                                              # command matches either
    python scripts/refresh_docs.py --timed    # also the examples timed on this CPU (TIMED)
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```\n", re.S | re.M)
WIDTH = "130"
# The CLI's answer to a path that is not there: in an example it means the example is stale
# (a file moved), never output to show (README once showed it for the tiny Llama's spec).
STALE_PATH = "error: file not found:"
# Examples timed on this machine's CPU (`validate run --device cpu`, `validate e2e --device cpu`):
# their figures are the machine's and its load's, and `validate run` stores a results file, so
# they are refreshed only with --timed, on a quiet machine.
TIMED = r"--device cpu\b"


def commands_in(block: str) -> list[tuple[str, str]]:
    """(command as written, command to run) for each `$ rooflens` line of a block."""
    out, lines, i = [], block.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ rooflens"):
            written = [line]
            while written[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                written.append(lines[i])
            text = "\n".join(written)
            out.append((text, " ".join(w.rstrip("\\").strip() for w in written)[2:]))
        i += 1
    return out


def run(command: str) -> str:
    """The command's output; a trailing `| grep -E PATTERN` keeps the lines that match, as the
    shell would (the example is run without a shell, so the pipe is applied here)."""
    env = {**os.environ, "COLUMNS": WIDTH, "TERM": "dumb"}
    command, _, pattern = command.partition(" | grep -E ")
    argv = shlex.split(command)
    argv[0] = str(Path(sys.executable).with_name("rooflens"))
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env, check=False)
    out = (done.stdout + done.stderr).rstrip()
    if pattern:
        regex = re.compile(shlex.split(pattern)[0])
        out = "\n".join(line for line in out.splitlines() if regex.search(line))
    return out


def refresh(text: str, skip: re.Pattern[str] | None = None) -> tuple[str, int]:
    changed = 0

    def one(match: re.Match[str]) -> str:
        nonlocal changed
        block = match.group(1)
        cmds = commands_in(block)
        if not cmds or not block.startswith("$ rooflens"):
            return match.group(0)
        if skip is not None and any(skip.search(command) for _, command in cmds):
            return match.group(0)  # left as it is (a long run refreshed on its own)
        outputs = [run(command.split("  #")[0]) for _, command in cmds]
        if any("usage: rooflens" in out or "see `rooflens" in out for out in outputs):
            print(f"left alone (does not parse): {cmds[0][1][:80]}", file=sys.stderr)
            return match.group(0)  # a placeholder or a broken example, never shown as output
        if any(STALE_PATH in out for out in outputs):  # a file the tree no longer has there
            print(f"left alone (names a missing file): {cmds[0][1][:80]}", file=sys.stderr)
            return match.group(0)
        body = "\n".join(f"{w}\n{out}" for (w, _), out in zip(cmds, outputs, strict=True)) + "\n"
        changed += body != block
        fence = match.group(0).split("\n", 1)[0]
        return f"{fence}\n{body}```\n"

    return FENCE.sub(one, text), changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report changes, write nothing")
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        help="regex: leave blocks with a command that matches it (repeatable)",
    )
    parser.add_argument(
        "--timed",
        action="store_true",
        help="also re-run the examples timed on this CPU (left alone by default)",
    )
    parser.add_argument("files", nargs="*", help="default: README.md and docs/*.md")
    args = parser.parse_args()
    patterns = [*args.skip, *([] if args.timed else [TIMED])]
    skip = re.compile("|".join(f"(?:{s})" for s in patterns)) if patterns else None
    default = [REPO / "README.md", *sorted(REPO.glob("docs/*.md"))]
    files = [Path(f).resolve() for f in args.files] or default
    stale = 0
    for path in files:
        new, changed = refresh(path.read_text(), skip)
        if changed:
            stale += changed
            verb = "differ" if args.check else "refreshed"
            shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
            print(f"{shown}: {changed} example(s) {verb}")
            if not args.check:
                path.write_text(new)
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
