"""The one error type users see: a one-line, actionable message (DESIGN.md, Errors)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

SpecT = TypeVar("SpecT", bound=BaseModel)


class RooflensError(ValueError):
    """Bad input. The message is one line and says what to do about it. `field` names the
    scenario field (a ScenarioRequest field) the input was about, or is None (the model spec, a
    file): a face shows the message beside that field's control without reading the text."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field

    def __reduce__(self) -> Any:  # keeps `field` through pickling (multiprocessing, caches)
        return (type(self), (str(self), self.field))


class FieldError(RooflensError):
    """Bad input about one scenario field, with the field's name left as a slot: `template` holds
    `{subject}` where the field is named, `flag` and `value` fill it. str() is the CLI's words
    (`--tp 3 must divide …`); `worded(label)` a widget's (`“Tensor-parallel GPUs (TP)” = 3 must
    divide …`), so no face parses another face's text."""

    def __init__(self, field: str, template: str, flag: str, value: Any = None) -> None:
        self.template, self.flag, self.value = template, flag, value
        subject = flag if value is None else f"{flag} {value}"
        super().__init__(template.replace("{subject}", subject), field)

    def __reduce__(self) -> Any:
        return (type(self), (self.field, self.template, self.flag, self.value))

    def worded(self, label: str) -> str:
        """The message with the field named by its widget's label."""
        subject = f"“{label}”" if self.value is None else f"“{label}” = {self.value}"
        return self.template.replace("{subject}", subject)

    def with_prefix(self, prefix: str) -> FieldError:
        """The same error, its message after `prefix` (`invalid scenario: `)."""
        return FieldError(str(self.field), prefix + self.template, self.flag, self.value)


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
