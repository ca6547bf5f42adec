"""``fleetlab progress``: which checks pass, per lab."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register ``progress`` on ``subparsers``."""
    shown = subparsers.add_parser("progress", help="show, per lab, which checks pass")
    shown.add_argument("--lab", help="only this lab, e.g. 01")
    shown.set_defaults(run=_progress)


def _progress(args: argparse.Namespace, console: Console) -> int:
    from fleetlab.course.grading import progress
    from fleetlab.course.grading.display import SYMBOL

    for lab in [args.lab] if args.lab else progress.labs():
        table = Table(title=f"lab {lab}", title_justify="left")
        for column in ("", "check", "exercise", "status", "points", "last run"):
            table.add_column(column)
        for row in progress.rows(lab):
            mark = SYMBOL.get(row.status, "-")
            table.add_row(mark, row.id, row.title, row.label, row.score, row.at)
        console.print(table)
    console.print(f"results from {progress.progress_file()}")
    return 0
