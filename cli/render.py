"""How the `rooflens` subcommands print: the terminal console (140 columns), titled tables,
JSON on stdout, and the few cell formats more than one subcommand shares. No numbers are
computed here; they come from model/ already final."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from model.io import to_json

console = Console(width=140)


def print_json(data: Any) -> None:
    print(to_json(data))


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> Group:
    """A titled, aligned table; the title sits on its own line so it never wraps to the table."""
    t = Table(header_style="bold")
    for i, column in enumerate(columns):
        t.add_column(column, justify="left" if i == 0 else "right")
    for row in rows:
        t.add_row(*row)
    return Group(Text(title, style="bold"), t)


def weights_text(sc: Any) -> str:
    """The weight dtype, with the routed experts' where it differs (gpt-oss: mxfp4)."""
    p = sc.precision
    experts = f" (experts {p.expert_dtype})" if p.expert_dtype != p.weight_dtype else ""
    return p.weight_dtype + experts


def times(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}×"
