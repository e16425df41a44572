"""`rooflens dashboard`: start Streamlit on the installed package's page (dashboard/entry/page.py)
with the package's server options (dashboard/entry/config.toml, passed as flags, so it works from
any directory and from a wheel). `--port`, `--address` and `--headless` are the usual server
options; anything after `--` (e.g. `-- --theme.base dark`) goes to `streamlit run` unchanged.
Both win over the shipped options, which come first."""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from importlib import resources
from typing import Any

from rooflens.argtypes import whole

ENTRY = resources.files("rooflens.dashboard.entry")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("dashboard", help="open the Streamlit dashboard")
    p.add_argument("--port", type=whole(1, 65535), help="port to serve on (default 8501)")
    p.add_argument("--address", help="address to bind (default localhost; 0.0.0.0 shares it)")
    p.add_argument("--headless", action="store_true", help="do not open a browser")
    p.add_argument("streamlit_args", nargs=argparse.REMAINDER,
                   help="after --: to `streamlit run`, e.g. -- --theme.base dark")  # fmt: skip
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
    extra = [a for a in args.streamlit_args if a != "--"]
    for option, value in (("port", args.port), ("address", args.address)):
        if value is not None:
            extra[:0] = [f"--server.{option}={value}"]
    if args.headless:
        extra[:0] = ["--server.headless=true"]
    command = streamlit_command(extra)
    # the launcher becomes Streamlit (exec), so a signal to `rooflens dashboard` reaches the
    # server itself: a terminated launcher never leaves an orphaned server on its port
    os.execv(command[0], command)
    return 0  # not reached
