"""How the `rooflens` command fails: its exit statuses, the parser every subcommand uses (its
errors are one line), `one_line`, how `main` prints an exception, and `show_warning`, so that
bad input ends in one line and exit 2 and a bug in one line saying where to report it, never a
traceback. The argument types (whole, finite numbers) are in argtypes.py.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

EXIT_BUG = 1
EXIT_BAD_INPUT = 2
EXIT_DOES_NOT_FIT = 3  # the model does not fit in memory, or no plan meets the load
REPORT = "please report it as a rooflens issue, with the command and its `--debug` output"


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit 2), with where to look."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


def one_line(exc: Exception) -> int:
    """Print an exception as one line on stderr; return the exit status it stands for.

    Bad input (RooflensError, or a ValueError/OSError from a library on the user's data or
    files, or a file nested too deeply to read) is exit 2; anything else is a bug, exit 1.
    """
    if isinstance(exc, OSError):
        name = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {name}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if isinstance(exc, RecursionError):
        print("error: the input is nested too deeply to read", file=sys.stderr)
        return EXIT_BAD_INPUT
    if isinstance(exc, ValueError):
        lines = str(exc).strip().splitlines()
        print(f"error: {lines[0] if lines else type(exc).__name__}", file=sys.stderr)
        return EXIT_BAD_INPUT
    lines = str(exc).strip().splitlines()
    detail = f": {lines[0]}" if lines else ""
    print(f"internal error ({type(exc).__name__}{detail}); this is a bug: {REPORT}",
          file=sys.stderr)  # fmt: skip
    return EXIT_BUG


def show_warning(message: Warning | str, *_: object, **__: object) -> None:
    """`warnings.showwarning` for the CLI: `warning: <message>` on one line of stderr."""
    print(f"warning: {str(message).splitlines()[0] if str(message) else message}",
          file=sys.stderr)  # fmt: skip
