"""``fleetlab doctor``: the backend, the versions installed and the backend's fidelity table."""

from __future__ import annotations

import argparse
import platform
from typing import Any

from rich.console import Console
from rich.table import Table

from fleetlab.backends.backend import open_backend
from fleetlab.cli.options import add_backend_flag
from fleetlab.core.timescale import describe_scale
from fleetlab.core.versions import package_version

PACKAGES = ("fleetlab", "boto3", "moto", "time-machine", "aws-lambda-powertools", "jupyterlab", "nbclient", "nbval")


def add_command(subparsers: Any) -> None:
    doctor = subparsers.add_parser("doctor", help="show the backend, versions and the fidelity table")
    add_backend_flag(doctor)
    doctor.add_argument("--refresh", action="store_true", help="re-measure the fidelity table")
    doctor.set_defaults(run=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from fleetlab.backends.fidelity import probe

    backend = open_backend(args.backend)
    try:
        details = ", ".join(f"{key}: {value}" for key, value in backend.details.items())
        console.print(f"[bold]backend[/]: {backend.name}  ({details})")
        clock = "virtual" if backend.clock.virtual else describe_scale(backend.clock.scale)
        console.print(f"[bold]clock[/]: {clock}; python {platform.python_version()}", soft_wrap=True)
        console.print(versions_table())
        with console.status("probing the backend's capabilities..."):
            table = probe(backend, refresh=args.refresh)
        console.print(table.to_rich())
    finally:
        backend.close()
    return 0


def versions_table() -> Table:
    table = Table(title="versions")
    table.add_column("package")
    table.add_column("version")
    for package in PACKAGES:
        table.add_row(package, package_version(package))
    return table
