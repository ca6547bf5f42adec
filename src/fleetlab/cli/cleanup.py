"""``fleetlab cleanup --prefix PREFIX``: remove what a dead kernel left behind."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from fleetlab.backends import sweep
from fleetlab.backends.backend import open_backend
from fleetlab.cli.argtypes import RESOURCE_PREFIX
from fleetlab.cli.options import backend_option
from fleetlab.cli.output import stdout_console


@click.command(
    "cleanup",
    short_help="list (and with --yes delete) every resource whose name starts with a prefix",
    help="Find what a lab made under PREFIX (queues, rules and their targets, buses, archives, "
    "state machines, tables, buckets, roles) and, with --yes, delete it. For LocalStack and real AWS, "
    "where resources outlive a kernel that died before lab.close(); moto keeps its resources inside "
    "the process that made them.",
)
@click.option("--prefix", type=RESOURCE_PREFIX, required=True, help="the prefix the lab printed, e.g. fl-01-3fa9c2-")
@backend_option
@click.option("--yes", is_flag=True, help="delete what was found (without it: only list)")
def command(prefix: str, backend: str | None, yes: bool) -> int:
    """List what the prefix names; delete it with ``--yes``. Exit 1 when a deletion failed."""
    console = stdout_console()
    opened = open_backend(backend)
    try:
        found = sweep.find(opened, prefix)
        if not found:
            console.print(f"nothing on {opened.name} is named {prefix}*", highlight=False)
            return 0
        console.print(found_table(found, f"on {opened.name}, named {prefix}*"))
        if not yes:
            console.print(f"run again with --yes to delete these {len(found)}", highlight=False)
            return 0
        problems = sweep.remove(opened, found)
    finally:
        opened.close()
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
