"""The ``fleetlab`` command: doctor, demo, and the course's tools.

Every subcommand is a thin layer over library functions; flags are validated
by argparse, and a FleetlabError becomes a one-line message and exit code 2.
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from . import bench
from .argtypes import non_negative_int, positive_int
from .backends import BACKEND_NAMES, open_backend
from .envelope import Envelope
from .errors import FleetlabError
from .faults import Crash, CrashPoint, FaultPlan
from .grading.commands import add_commands as add_grading_commands
from .model import FakeModel
from .pipeline import Fleet
from .topology import new_prefix, provision

PACKAGES = ("fleetlab", "boto3", "moto", "time-machine", "aws-lambda-powertools", "jupyterlab", "nbclient", "nbval")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fleetlab`` console script. Returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    console = Console()
    try:
        return int(args.run(args, console) or 0)
    except FleetlabError as exc:
        console.print(f"[bold red]fleetlab {args.command}:[/] {exc}", highlight=False)
        return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fleetlab", description="The fleetlab course's command line.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    doctor = commands.add_parser("doctor", help="show the backend, versions and the fidelity table")
    _backend_flag(doctor)
    doctor.add_argument("--refresh", action="store_true", help="re-measure the fidelity table")
    doctor.set_defaults(run=run_doctor)

    demo = commands.add_parser("demo", help="run events through the whole pipeline and show each trace")
    _backend_flag(demo)
    demo.add_argument("--events", type=positive_int, default=12, help="steps published on the bus (default 12)")
    demo.add_argument("--orchestrated", type=non_negative_int, default=2,
                      help="steps dispatched by the state machine (default 2)")
    demo.add_argument("--seed", type=int, default=7, help="seed of the fake model (default 7)")
    demo.add_argument("--crash", action="store_true", help="crash one worker after its effect, before the delete")
    demo.set_defaults(run=run_demo)

    add_grading_commands(commands)
    bench.add_command(commands)
    return parser


def _backend_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=BACKEND_NAMES, default=None,
                        help="backend to use (default: $FLEETLAB_BACKEND or moto)")


def run_doctor(args: argparse.Namespace, console: Console) -> int:
    from .fidelity import probe

    backend = open_backend(args.backend)
    try:
        details = ", ".join(f"{key}: {value}" for key, value in backend.details.items())
        console.print(f"[bold]backend[/]: {backend.name}  ({details})")
        console.print(f"[bold]clock[/]: {'virtual' if backend.clock.virtual else 'real'}; "
                      f"python {platform.python_version()}")
        console.print(_versions_table())
        with console.status("probing the backend's capabilities..."):
            table = probe(backend, refresh=args.refresh)
        console.print(table.to_rich())
    finally:
        backend.close()
    return 0


def _versions_table() -> Table:
    table = Table(title="versions")
    table.add_column("package")
    table.add_column("version")
    for package in PACKAGES:
        try:
            table.add_row(package, version(package))
        except PackageNotFoundError:
            table.add_row(package, "not installed")
    return table


def run_demo(args: argparse.Namespace, console: Console) -> int:
    backend = open_backend(args.backend)
    if "account" in backend.details:
        console.print(f"real AWS account {backend.details['account']}: every name starts with fl-demo-")
    topology = None
    try:
        with console.status(f"provisioning the topology on {backend.name}..."):
            topology = provision(backend, prefix=new_prefix("demo"))
        steps = _demo_steps(args.events + args.orchestrated)
        faults = FaultPlan(crashes=(Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, steps[0].trace_id),)) if args.crash else None
        fleet = Fleet(backend, topology, model=FakeModel(seed=args.seed), faults=faults)
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("publishing", total=len(steps))
            for step in steps[: args.events]:
                fleet.submit(step)
                progress.advance(task)
            for step in steps[args.events :]:
                fleet.orchestrate(step)
                progress.advance(task)
        with console.status("workers draining the queues..."):
            fleet.run(advance=max(q.visibility_timeout for q in topology.queues.values()) + 1)
            statuses = fleet.finish_executions()
        _print_traces(console, fleet)
        summary = fleet.ledger.summary(fleet.submitted)
        console.print(
            f"{len(steps)} steps: {summary.effects} effects, {summary.duplicated} duplicated, "
            f"{summary.lost} lost, {len(fleet.unsettled())} unsettled"
        )
        succeeded = all(status == "SUCCEEDED" for status in statuses.values())
        return 0 if summary.exactly_once and not fleet.unsettled() and succeeded else 1
    finally:
        if topology is not None:
            topology.teardown()
        backend.close()


def _demo_steps(count: int) -> list[Envelope]:
    classes = ("researcher", "coder")
    return [
        Envelope(
            trace_id=f"conv-{1000 + i}-step-1",
            conversation_id=str(1000 + i),
            step=1,
            agent_class=classes[i % len(classes)],
            payload={"question": f"task {i}"},
        )
        for i in range(count)
    ]


def _print_traces(console: Console, fleet: Fleet) -> None:
    table = Table(title="each trace, hop by hop")
    table.add_column("trace_id")
    table.add_column("hops")
    table.add_column("took", justify="right")
    for trace_id in fleet.tracer.trace_ids():
        hops = fleet.tracer.timeline(trace_id)
        path = " > ".join(h.name for h in hops)
        table.add_row(trace_id, path, f"{hops[-1].at - hops[0].at:.1f} s")
    console.print(table)


if __name__ == "__main__":
    sys.exit(main())
