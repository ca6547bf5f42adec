"""``fleetlab progress``: which checks pass, per lab."""

from __future__ import annotations

import click
from rich.table import Table

from fleetlab.cli.output import stdout_console


def shipped_lab(ctx: click.Context, param: click.Parameter, lab: str | None) -> str | None:
    """``--lab``: one of the labs that ship checks (``3`` or ``03``); BadParameter lists them."""
    from fleetlab.course.grading.registry import lab_id, shipped_labs

    if lab is None:
        return None
    labs = shipped_labs()
    if lab_id(lab) not in labs:
        raise click.BadParameter(f"no lab {lab!r} has checks; choose from {', '.join(labs)}", ctx, param)
    return lab_id(lab)


@click.command("progress", help="show, per lab, which checks pass")
@click.option("--lab", callback=shipped_lab, help="only this lab, e.g. 01 (or 1)")
def command(lab: str | None) -> int:
    from fleetlab.course.grading import progress
    from fleetlab.course.grading.display import SYMBOL

    console = stdout_console()
    for shown in [lab] if lab else progress.labs():
        table = Table(title=f"lab {shown}", title_justify="left")
        for column in ("", "check", "exercise", "status", "points", "last run"):
            table.add_column(column)
        for row in progress.rows(shown):
            mark = SYMBOL.get(row.status, "-")
            table.add_row(mark, row.id, row.title, row.label, row.score, row.at)
        console.print(table)
    recorded = progress.progress_file()
    if recorded.is_file():
        console.print(f"results from {recorded}", soft_wrap=True)
    else:
        console.print(f"no results yet: each check() run in a notebook records its result in {recorded}",
                      soft_wrap=True)
    return 0
