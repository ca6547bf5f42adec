"""The ``fleetlab`` command: one runner for every subcommand.

Each subcommand lives in its own module here and registers itself with
``add_command(subparsers)``, setting ``run(args, console) -> exit code``.
The course's tooling (``localstack``) and the instructor's side (``assign``,
``grade``, ``bench``) add theirs through the ``fleetlab.commands`` entry point;
where they are not installed, their names still parse and say what to install.
Flags are validated by argparse (exit 2, the flag named); a FleetlabError
becomes one line on stderr and exit 2. Output goes to stdout, at the width
``output.stdout_console`` chooses (tables never wrap outside a terminal).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from importlib.metadata import entry_points

from rich.console import Console
from rich.markup import escape

from fleetlab.cli import capacity, cleanup, cost, doctor, grading, keda_size
from fleetlab.cli import demo as demo_command
from fleetlab.cli.output import stdout_console
from fleetlab.core.errors import FleetlabError


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
    cost.add_command(commands)
    keda_size.add_command(commands)
    capacity.add_command(commands)
    cleanup.add_command(commands)
    for plugin in entry_points(group="fleetlab.commands"):
        plugin.load()(commands)
    _add_missing(commands)
    return parser


ELSEWHERE = {
    "assign": ("the instructor's package", "instructor"),
    "grade": ("the instructor's package", "instructor"),
    "bench": ("the instructor's package", "instructor"),
    "localstack": ("the course's tooling", "tools"),
}
"""Subcommands that other distributions of this repository add: name -> (what, folder)."""


def _add_missing(commands: argparse._SubParsersAction) -> None:
    """Each subcommand of ``ELSEWHERE`` not installed: it parses, and says what to install (exit 2)."""
    for name, (what, folder) in ELSEWHERE.items():
        if name in commands.choices:
            continue
        missing = commands.add_parser(name, help=f"(not installed: comes with {what}, {folder}/)")
        missing.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        missing.set_defaults(run=_not_installed(name, what, folder))


def _not_installed(name: str, what: str, folder: str):
    def run(args: argparse.Namespace, console: Console) -> int:
        raise FleetlabError(f"`fleetlab {name}` comes with {what}, which is not installed here: "
                            f"from the repository's root, `pip install -e {folder}` (make venv does)")

    return run
