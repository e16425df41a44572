"""The one error type users see: a one-line, actionable message (DESIGN.md, Errors)."""

from __future__ import annotations

import difflib

from pydantic import ValidationError


class RooflensError(ValueError):
    """Bad input. The message is one line and says what to do about it."""


def unknown_name_error(kind: str, name: str, known: list[str]) -> RooflensError:
    """An unknown preset: name the close matches, or list what exists when none is close."""
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(sorted(known))}"
    return RooflensError(f"unknown {kind} '{name}': {hint} (see `rooflens list {kind}s`)")


def validation_message(err: ValidationError, what: str) -> str:
    """One line naming the offending field(s) of a pydantic validation error."""
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"])
        msg = str(e["msg"]).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)  # a whole-spec check names its fields
    return f"invalid {what}: " + "; ".join(parts)
