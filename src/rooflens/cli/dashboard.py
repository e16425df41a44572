"""`rooflens dashboard`: start Streamlit on the installed package's page (dashboard/entry/page.py)
with the package's server options (dashboard/entry/config.toml, passed as flags, so it works from
any directory and from a wheel). Options after the subcommand (e.g. `--server.port 8502`) go to
`streamlit run` unchanged and win over the shipped ones."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from importlib import resources
from typing import Any

ENTRY = resources.files("rooflens.dashboard.entry")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "dashboard",
        help="open the Streamlit dashboard (options after it go to `streamlit run`)",
    )
    p.add_argument("streamlit_args", nargs=argparse.REMAINDER,
                   help="passed to `streamlit run`, e.g. --server.port 8502")  # fmt: skip
    p.set_defaults(handler=cmd_dashboard)


def config_flags() -> list[str]:
    """The shipped config.toml as `streamlit run` flags: `--section.key=value`."""
    settings = tomllib.loads(ENTRY.joinpath("config.toml").read_text(encoding="utf-8"))
    return [f"--{section}.{key}={str(value).lower() if isinstance(value, bool) else value}"
            for section, table in settings.items() for key, value in table.items()]  # fmt: skip


def streamlit_command(extra: list[str]) -> list[str]:
    """The command line `rooflens dashboard` runs; flags given later override earlier ones."""
    page = str(ENTRY.joinpath("page.py"))
    return [sys.executable, "-m", "streamlit", "run", page, *config_flags(), *extra]


def cmd_dashboard(args: argparse.Namespace) -> int:
    try:
        return subprocess.call(streamlit_command(list(args.streamlit_args)))
    except KeyboardInterrupt:
        return 0
