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

import argparse
from typing import Any

from rich.console import Console

from fleetlab.cli.argtypes import choice_list, positive_int
from fleetlab_tools.localstack import host as localstack_host
from fleetlab_tools.localstack import suite as localstack_suite


def add_localstack(subparsers: Any) -> None:
    """Register ``localstack`` and its actions on the ``fleetlab`` command's subparsers."""
    command = subparsers.add_parser(
        "localstack",
        help="run a real LocalStack on this machine without Docker (up, down, status, test)",
        description="Install (once, into .localstack/), start, stop and inspect a LocalStack on 127.0.0.1:4566 "
        "with DynamoDB and S3 from a moto server on 127.0.0.1:4567.",
    )
    actions = command.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = actions.add_parser("up", help="install if needed, start, wait until healthy, print the exports")
    up.add_argument("--timeout", type=positive_int, default=120,
                    help="seconds to wait for both services to be healthy (default 120)")
    up.set_defaults(run=run_up)
    actions.add_parser("down", help="stop what `up` started, and only that").set_defaults(run=run_down)
    actions.add_parser("status", help="installed? running? healthy?").set_defaults(run=run_status)
    test = actions.add_parser(
        "test", help="start LocalStack, run the contract suite and every notebook on it, stop it (make test-localstack)"
    )
    parts = localstack_suite.PARTS
    test.add_argument("--only", type=choice_list(parts, "part"), default=parts, metavar="PART[,PART]",
                      help=f"parts to run, from {', '.join(parts)} (default all)")
    labs = tuple(path.name[:2] for path in localstack_suite.lab_notebooks(localstack_host.default_home().root.parent,
                                                                          "instructor"))
    test.add_argument("--labs", type=choice_list(labs, "lab"), default=(), metavar="NN[,NN]",
                      help=f"run the notebooks of these labs only, from {', '.join(labs)} (default every lab)")
    test.add_argument("--goal", type=positive_int, default=int(localstack_suite.NOTEBOOK_GOAL),
                      help=f"seconds each notebook should take: reported, never a failure "
                           f"(default {localstack_suite.NOTEBOOK_GOAL:g})")
    test.add_argument("--limit", type=positive_int, default=int(localstack_suite.NOTEBOOK_LIMIT),
                      help=f"seconds after which a notebook is taken to hang and fails "
                           f"(default {localstack_suite.NOTEBOOK_LIMIT:g})")
    test.add_argument("--fidelity", action="store_true",
                      help="also rewrite docs/fidelity.md with the moto, moto-server and LocalStack columns")
    test.set_defaults(run=run_test)


def run_up(args: argparse.Namespace, console: Console) -> int:
    progress = _progress()
    started = localstack_host.up(timeout=args.timeout, report=progress)
    if started.install_seconds is not None:
        progress(f"installed in {started.install_seconds:.0f} s")
    if started.start_seconds is not None:
        progress(f"healthy {started.start_seconds:.1f} s after starting")
    for name, value in started.environment.items():
        console.print(f"export {name}={value}", highlight=False, soft_wrap=True)
    return 0


def run_down(args: argparse.Namespace, console: Console) -> int:
    localstack_host.down(report=_progress())
    return 0


def run_status(args: argparse.Namespace, console: Console) -> int:
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


def run_test(args: argparse.Namespace, console: Console) -> int:
    repo = localstack_host.default_home().root.parent
    doc = repo / "docs" / "fidelity.md" if args.fidelity else None
    result = localstack_suite.run(repo, parts=args.only, limit=args.limit, goal=args.goal, labs=args.labs,
                                  fidelity_doc=doc, console=console)
    return 0 if result.passed else 1


def _progress() -> localstack_host.Report:
    errors = Console(stderr=True, soft_wrap=True)
    return lambda line: errors.print(f"fleetlab localstack: {line}", highlight=False)
