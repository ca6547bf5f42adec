"""The ``fleetlab`` command: one runner for every subcommand.

Each subcommand lives in its own module here and registers itself with
``add_command(subparsers)``, setting ``run(args, console) -> exit code``.
Flags are validated by argparse (exit 2, the flag named); a FleetlabError
becomes one line on stderr and exit 2. Output goes to stdout, at the width
``output.stdout_console`` chooses (tables never wrap outside a terminal).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from ..errors import FleetlabError
from . import bench, capacity, cleanup, cost, doctor, grading, keda_size, localstack
from .output import stdout_console
from . import demo as demo_command


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fleetlab`` console script. Returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args, stdout_console()) or 0)
    except FleetlabError as exc:
        Console(stderr=True, soft_wrap=True).print(f"[bold red]fleetlab {args.command}:[/] {escape(str(exc))}", highlight=False)
        return 2


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="fleetlab", description="The fleetlab course's command line.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    doctor.add_command(commands)
    demo_command.add_command(commands)
    grading.add_commands(commands)
    bench.add_command(commands)
    cost.add_command(commands)
    keda_size.add_command(commands)
    capacity.add_command(commands)
    cleanup.add_command(commands)
    localstack.add_command(commands)
    return parser
