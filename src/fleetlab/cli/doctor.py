"""``fleetlab doctor``: the backend, the versions installed and the backend's fidelity table.

In a file or a pipe the fidelity table, all prose, is printed as wrapped text, one block per feature.
"""

from __future__ import annotations

import platform

import click
from rich.table import Table

from fleetlab.backends.backend import open_backend
from fleetlab.cli.options import backend_option
from fleetlab.cli.output import fits_tables, stdout_console
from fleetlab.core.timescale import describe_scale
from fleetlab.core.versions import package_version

PACKAGES = ("fleetlab", "boto3", "moto", "time-machine", "aws-lambda-powertools", "jupyterlab", "nbclient", "nbval")


@click.command("doctor", help="show the backend, versions and the fidelity table")
@backend_option
@click.option("--refresh", is_flag=True, help="re-measure the fidelity table")
def command(backend: str | None, refresh: bool) -> int:
    from fleetlab.backends.fidelity import probe

    console = stdout_console()
    opened = open_backend(backend)
    try:
        details = ", ".join(f"{key}: {value}" for key, value in opened.details.items())
        console.print(f"[bold]backend[/]: {opened.name}  ({details})")
        clock = "virtual" if opened.clock.virtual else describe_scale(opened.clock.scale)
        console.print(f"[bold]clock[/]: {clock}; python {platform.python_version()}", soft_wrap=True)
        console.print(versions_table())
        with console.status("probing the backend's capabilities..."):
            table = probe(opened, refresh=refresh)
        if fits_tables(console):
            console.print(table.to_rich())
        else:
            console.print(table.to_text(), markup=False, highlight=False)
    finally:
        opened.close()
    return 0


def versions_table() -> Table:
    table = Table(title="versions")
    table.add_column("package")
    table.add_column("version")
    for package in PACKAGES:
        table.add_row(package, package_version(package))
    return table
