"""The one error type users see: a one-line, actionable message (DESIGN.md, Errors)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

SpecT = TypeVar("SpecT", bound=BaseModel)


class RooflensError(ValueError):
    """Bad input. The message is one line and says what to do about it."""


def unknown_name_error(kind: str, name: str, known: list[str]) -> RooflensError:
    """An unknown preset: name the close matches, or list what exists when none is close."""
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(sorted(known))}"
    return RooflensError(f"unknown {kind} '{name}': {hint} (see `rooflens list {kind}s`)")


def validation_message(err: ValidationError, what: str, known: Iterable[str] | None = None) -> str:
    """One line naming the offending field(s) of a pydantic validation error.

    It never quotes the input: pydantic's messages name the expected type or bound, not the
    value, and a key the spec does not know (which may be anything: a password's name in the
    wrong file) is counted, not shown; `known` lets it suggest the field a typo meant.
    """
    parts, unknown = [], 0
    for e in err.errors(include_input=False, include_url=False):
        if e["type"] == "extra_forbidden":
            unknown += 1
            if known is not None and e["loc"]:
                close = difflib.get_close_matches(str(e["loc"][-1]), list(known), n=1, cutoff=0.8)
                if close:
                    parts.append(f"an unknown field: did you mean {close[0]}?")
                    unknown -= 1
            continue
        loc = ".".join(str(x) for x in e["loc"])
        msg = str(e["msg"]).removeprefix("Value error, ")
        parts.append(f"field {loc}: {msg}" if loc else msg)  # a whole-spec check names its fields
    if unknown:
        parts.append(f"{unknown} field{'s' if unknown > 1 else ''} it does not know")
    return f"invalid {what}: " + "; ".join(parts)


def validated(cls: type[SpecT], data: Any, what: str) -> SpecT:
    """`cls` validated from plain data (a preset, a spec file, a profile); a bad field is one
    RooflensError naming `what` and the field, never the input (`validation_message`)."""
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise RooflensError(validation_message(exc, what, cls.model_fields)) from None
