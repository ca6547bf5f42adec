"""The ``fleetlab`` command: a click group with one subcommand per module here.

Each module here defines ``command``, a click command whose callback returns
the exit code. The course's tooling (``localstack``) and the instructor's side
(``assign``, ``release``, ``handout``, ``collect``, ``grade``, ``feedback``, ``bench``) add theirs through the ``fleetlab.commands``
entry point group, each entry point naming a click command; where they are not
installed, their names still parse and say what to install (exit 2).
A bad flag is a usage error (exit 2, the flag named); a FleetlabError becomes
its message on stderr (one line; a manifest's several problems one a line) and
exit 2. Output goes to stdout, at the width
``output.stdout_console`` chooses (tables never wrap outside a terminal).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from fleetlab.cli import capacity, cleanup, cost, doctor, grading, keda_size
from fleetlab.cli import demo as demo_command
from fleetlab.core.errors import FleetlabError

BUILT_IN = (doctor.command, demo_command.command, grading.command, cost.command, keda_size.command,
            capacity.command, cleanup.command)
"""The subcommands of the learner's package (``fleetlab --help`` lists every subcommand by name)."""

ELSEWHERE = {
    "assign": ("the instructor's package", "instructor"),
    "release": ("the instructor's package", "instructor"),
    "handout": ("the instructor's package", "instructor"),
    "collect": ("the instructor's package", "instructor"),
    "grade": ("the instructor's package", "instructor"),
    "feedback": ("the instructor's package", "instructor"),
    "gradebook": ("the instructor's package", "instructor"),
    "bench": ("the instructor's package", "instructor"),
    "localstack": ("the course's tooling", "tools"),
}
"""Subcommands that other distributions of this repository add: name -> (what, folder)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fleetlab`` console script (``argv`` defaults to ``sys.argv[1:]``). Returns the exit code."""
    try:
        return int(build_cli().main(args=argv, prog_name="fleetlab", standalone_mode=False) or 0)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        click.echo("Aborted!", err=True)
        return 1


def build_cli() -> click.Group:
    """The ``fleetlab`` group: the built-in subcommands, the installed plugins' and a stand-in for each missing one."""
    group = FleetlabGroup(name="fleetlab", help="The fleetlab course's command line.",
                          context_settings={"help_option_names": ["-h", "--help"]})
    for command in BUILT_IN:
        group.add_command(command)
    for plugin in entry_points(group="fleetlab.commands"):
        group.add_command(plugin.load(), plugin.name)
    for name, (what, folder) in ELSEWHERE.items():
        if name not in group.commands:
            group.add_command(not_installed(name, what, folder))
    return group


class FleetlabGroup(click.Group):
    """A group whose subcommands' FleetlabErrors become ``CommandFailed`` (the message on stderr, exit 2)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except FleetlabError as exc:
            raise CommandFailed(ctx.invoked_subcommand or self.name or "fleetlab", exc) from exc


class CommandFailed(click.ClickException):
    """A FleetlabError raised by subcommand ``command``: shown as ``fleetlab COMMAND: message``, exit 2."""

    exit_code = 2

    def __init__(self, command: str, error: FleetlabError) -> None:
        super().__init__(str(error))
        self.command = command

    def show(self, file: Any = None) -> None:
        console = Console(file=file, stderr=file is None, soft_wrap=True)
        console.print(f"[bold red]fleetlab {self.command}:[/] {escape(self.message)}", highlight=False)


def not_installed(name: str, what: str, folder: str) -> click.Command:
    """A stand-in for ``fleetlab NAME``: it takes any arguments and exits 2 saying what to install."""

    def refuse(**_: Any) -> int:
        raise FleetlabError(f"`fleetlab {name}` comes with {what}, which is not installed here: "
                            f"from the repository's root, `pip install -e {folder}` (make venv does)")

    return click.Command(
        name, callback=refuse, help=f"(not installed: comes with {what}, {folder}/)",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
