"""`rooflens list {models,gpus,systems,optimizations}`: the presets and the optimization
registry, as a table or JSON (rows and cells built in cli/catalog.py)."""

from __future__ import annotations

import argparse
from typing import Any

from rooflens.cli.render import console, print_json, table


def add_parser(sub: Any) -> None:
    p = sub.add_parser("list", help="list presets and optimizations")
    p.add_argument("what", choices=("models", "gpus", "systems", "optimizations"))
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_list)


def cmd_list(args: argparse.Namespace) -> int:
    from rooflens.cli.catalog import catalog

    listing = catalog(args.what)
    if args.json:
        print_json(listing.rows)
    else:
        console.print(table(listing.title, listing.columns, listing.cells))
    return 0
