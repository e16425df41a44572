"""How the `rooflens` subcommands print: the terminal console (140 columns), titled tables,
JSON on stdout, the few cell formats more than one subcommand shares, and the progress bar shown
when a long run (a plan's sweep) takes more than a second. No numbers are computed here; they
come from model/ already final."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from rooflens.io.files import to_json

console = Console(width=140)


def print_json(data: Any) -> None:
    print(to_json(data))


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> Group:
    """A titled, aligned table; the title sits on its own line so it never wraps to the table.
    The first column (an id, a stage) keeps its full width: a key is never cut or wrapped."""
    t = Table(header_style="bold")
    key_width = max((len(str(row[0])) for row in rows if row), default=0)
    for i, column in enumerate(columns):
        if i == 0:
            t.add_column(column, justify="left", min_width=max(key_width, len(column)))
        else:
            t.add_column(column, justify="right")
    for row in rows:
        t.add_row(*row)
    return Group(Text(title, style="bold"), t)


def weights_text(sc: Any) -> str:
    """The precision in engine words, the scheme then its dtypes: 'W4A16 (int4 weights, bf16
    activations)', 'native: MXFP4 experts, bf16 attention (...)' (model/specs/quant.py)."""
    p = sc.precision
    experts = f", experts {p.expert_dtype}" if p.expert_dtype != p.weight_dtype else ""
    dtypes = f"{p.weight_dtype} weights{experts}, {p.act_dtype} activations"
    return p.text if p.text == dtypes else f"{p.text} ({dtypes})"


def times(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}×"


class LazyProgress:
    """A rich progress bar that appears only once the work has taken more than `after_s`."""

    def __init__(self, console: Console, label: str, after_s: float = 1.0):
        self.console, self.label, self.after_s = console, label, after_s
        self.start = time.perf_counter()
        self.bar: Progress | None = None
        self.task: Any = None

    def __call__(self, done: int, total: int | None) -> None:  # None: not known
        if self.bar is None and time.perf_counter() - self.start > self.after_s:
            self.bar = Progress(
                "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), console=self.console, transient=True,
            )  # fmt: skip
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=total)
        if self.bar is not None:
            self.bar.update(self.task, completed=done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
