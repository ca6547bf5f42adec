"""``fleetlab localstack up|down|status|test``: a real LocalStack on this machine, without Docker.

The ``fleetlab`` command finds this subcommand through the ``fleetlab.commands`` entry point.

``up`` installs LocalStack once into ``.localstack/``, starts it and the moto
server for DynamoDB and S3, waits until both are healthy, and prints the
environment to export (``eval "$(fleetlab localstack up)"`` applies it);
progress goes to stderr. ``down`` stops what ``up`` started. Both are
idempotent. ``test`` is ``make test-localstack``: see ``fleetlab_tools.localstack.suite``;
the rest is ``fleetlab_tools.localstack.host``.
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from fleetlab.cli.argtypes import POSITIVE_INT, ChoiceList
from fleetlab.cli.output import stdout_console
from fleetlab_tools.localstack import host as localstack_host
from fleetlab_tools.localstack import suite as localstack_suite


@click.group(
    "localstack",
    short_help="run a real LocalStack on this machine without Docker (up, down, status, test)",
    help="Install (once, into .localstack/), start, stop and inspect a LocalStack on 127.0.0.1:4566 "
    "with DynamoDB and S3 from a moto server on 127.0.0.1:4567.",
)
def localstack() -> None:
    """The ``localstack`` group: its actions are the subcommands below."""


@localstack.command("up", help="install if needed, start, wait until healthy, print the exports")
@click.option("--timeout", type=POSITIVE_INT, default=120,
              help="seconds to wait for both services to be healthy (default 120)")
def run_up(timeout: int) -> int:
    progress = _progress()
    started = localstack_host.up(timeout=timeout, report=progress)
    if started.install_seconds is not None:
        progress(f"installed in {started.install_seconds:.0f} s")
    if started.start_seconds is not None:
        progress(f"healthy {started.start_seconds:.1f} s after starting")
    console = stdout_console()
    for name, value in started.environment.items():
        console.print(f"export {name}={value}", highlight=False, soft_wrap=True)
    return 0


@localstack.command("down", help="stop what `up` started, and only that")
def run_down() -> int:
    localstack_host.down(report=_progress())
    return 0


@localstack.command("status", help="installed? running? healthy?")
def run_status() -> int:
    console = stdout_console()
    home = localstack_host.default_home()
    installed, states = localstack_host.status(home)
    where = f"installed in {home.venv}" if installed else f"not installed (the first `up` installs it into {home.venv})"
    console.print(f"LocalStack {localstack_host.RELEASE}: {where}", highlight=False, soft_wrap=True)
    for state in states:
        if state.pid is None:
            shown = "not started"
        elif not state.running:
            shown = f"not running (pid {state.pid} has exited)"
        else:
            shown = f"running, pid {state.pid}, " + ("healthy" if state.healthy else "NOT healthy")
        console.print(f"{state.name}: {state.url}: {shown}", highlight=False, soft_wrap=True)
    return 0 if all(state.healthy for state in states) else 1


PARTS = localstack_suite.PARTS
LABS = localstack_suite.every_lab(localstack_host.checkout() or Path.cwd())


TEST_HELP = "start LocalStack, run the contract suite and every notebook on it, stop it (make test-localstack)"


@localstack.command("test", short_help=TEST_HELP, help=TEST_HELP)
@click.option("--only", type=ChoiceList(PARTS, "part"), default=PARTS, metavar="PART[,PART]",
              help=f"parts to run, from {', '.join(PARTS)} (default all)")
@click.option("--labs", type=ChoiceList(LABS, "lab"), default=(), metavar="NN[,NN]",
              help=f"run the notebooks of these labs only, from {', '.join(LABS)} (default every lab)")
@click.option("--goal", type=POSITIVE_INT, default=int(localstack_suite.NOTEBOOK_GOAL),
              help=f"seconds each notebook should take: reported, never a failure "
                   f"(default {localstack_suite.NOTEBOOK_GOAL:g})")
@click.option("--limit", type=POSITIVE_INT, default=int(localstack_suite.NOTEBOOK_LIMIT),
              help=f"seconds after which a notebook is taken to hang and fails "
                   f"(default {localstack_suite.NOTEBOOK_LIMIT:g})")
@click.option("--jobs", type=POSITIVE_INT, default=localstack_suite.JOBS,
              help=f"parts (the contract suite, a notebook) to run at once (default {localstack_suite.JOBS})")
@click.option("--fidelity", is_flag=True,
              help="also rewrite docs/fidelity.md with the moto, moto-server and LocalStack columns")
def run_test(only: tuple[str, ...], labs: tuple[str, ...], goal: int, limit: int, jobs: int, fidelity: bool) -> int:
    repo = localstack_host.default_home().root.parent
    doc = repo / "docs" / "fidelity.md" if fidelity else None
    result = localstack_suite.run(repo, parts=only, limit=limit, goal=goal, labs=labs, fidelity_doc=doc, jobs=jobs,
                                  console=stdout_console())
    return 0 if result.passed else 1


def _progress() -> localstack_host.Report:
    errors = Console(stderr=True, soft_wrap=True)
    return lambda line: errors.print(f"fleetlab localstack: {line}", highlight=False)
