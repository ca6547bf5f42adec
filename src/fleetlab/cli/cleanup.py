"""``fleetlab cleanup --prefix PREFIX``: remove what a dead kernel left behind."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.table import Table

from fleetlab.backends import sweep
from fleetlab.backends.backend import open_backend
from fleetlab.cli.argtypes import resource_prefix
from fleetlab.cli.options import add_backend_flag


def add_command(subparsers: Any) -> None:
    """Register ``cleanup`` on the ``fleetlab`` command's subparsers."""
    cleanup = subparsers.add_parser(
        "cleanup",
        help="list (and with --yes delete) every resource whose name starts with a prefix",
        description="Find what a lab made under PREFIX (queues, rules and their targets, buses, archives, "
        "state machines, tables, buckets, roles) and, with --yes, delete it. For LocalStack and real AWS, "
        "where resources outlive a kernel that died before lab.close(); moto keeps its resources inside "
        "the process that made them.",
    )
    cleanup.add_argument("--prefix", type=resource_prefix, required=True,
                         help="the prefix the lab printed, e.g. fl-01-3fa9c2-")
    add_backend_flag(cleanup)
    cleanup.add_argument("--yes", action="store_true", help="delete what was found (without it: only list)")
    cleanup.set_defaults(run=run)


def run(args: argparse.Namespace, console: Console) -> int:
    """List what the prefix names; delete it with ``--yes``. Exit 1 when a deletion failed."""
    backend = open_backend(args.backend)
    try:
        found = sweep.find(backend, args.prefix)
        if not found:
            console.print(f"nothing on {backend.name} is named {args.prefix}*", highlight=False)
            return 0
        console.print(found_table(found, f"on {backend.name}, named {args.prefix}*"))
        if not args.yes:
            console.print(f"run again with --yes to delete these {len(found)}", highlight=False)
            return 0
        problems = sweep.remove(backend, found)
    finally:
        backend.close()
    errors = Console(stderr=True, soft_wrap=True)
    for problem in problems:
        errors.print(f"could not delete {problem}", highlight=False)
    console.print(f"deleted {len(found) - len(problems)} of {len(found)}", highlight=False)
    return 1 if problems else 0


def found_table(found: list[sweep.Found], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("kind")
    table.add_column("name")
    for item in found:
        table.add_row(item.kind, item.name)
    return table
