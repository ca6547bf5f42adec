"""``fleetlab progress``, ``assign`` and ``grade``: the course's grading commands."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .argtypes import positive_float, positive_int


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register ``progress``, ``assign`` and ``grade`` on ``subparsers``."""
    shown = subparsers.add_parser("progress", help="show, per lab, which checks pass")
    shown.add_argument("--lab", help="only this lab, e.g. 01")
    shown.set_defaults(run=_progress)

    assign = subparsers.add_parser("assign", help="write the student notebooks from the instructor notebooks")
    assign.add_argument("--solutions", type=Path, default=Path("labs/solutions"), help="instructor notebooks")
    assign.add_argument("--out", type=Path, default=Path("labs"), help="where the student notebooks go")
    assign.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 naming student notebooks that are stale"
    )
    assign.set_defaults(run=_assign)

    grade = subparsers.add_parser("grade", help="grade submitted notebooks into a gradebook CSV")
    grade.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="notebooks, or folders of them")
    grade.add_argument("--out", type=Path, default=Path("grades.csv"), help="the gradebook CSV to write")
    grade.add_argument("--cell-timeout", type=positive_float, default=60, help="seconds per cell (default 60)")
    grade.add_argument("--notebook-timeout", type=positive_float, default=300,
                       help="seconds per notebook (default 300)")
    grade.add_argument("--grading-timeout", type=positive_float, default=60,
                       help="seconds for the hidden cases (default 60)")
    grade.add_argument("--workers", type=positive_int, default=2, help="notebooks graded at once (default 2)")
    grade.set_defaults(run=_grade)


def _progress(args: argparse.Namespace, console: Console) -> int:
    from ..grading import progress
    from ..grading.display import SYMBOL

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


def _assign(args: argparse.Namespace, console: Console) -> int:
    from ..grading.assign import assign, stale

    if args.check:
        outdated = stale(args.solutions, args.out)
        for path in outdated:
            print(f"stale: {path}", file=sys.stderr)
        if outdated:
            print("run `fleetlab assign` and commit the student notebooks", file=sys.stderr)
            return 1
        console.print(f"student notebooks in {args.out} are up to date", soft_wrap=True)  # a path must not wrap
        return 0
    for path in assign(args.solutions, args.out):
        console.print(f"wrote {path}", soft_wrap=True)
    return 0


def _grade(args: argparse.Namespace, console: Console) -> int:
    from ..grading.grade import Limits, find_notebooks, grade_notebooks
    from ..grading.gradebook import summary_table, write_csv

    notebooks = find_notebooks(args.paths)
    limits = Limits(cell=args.cell_timeout, notebook=args.notebook_timeout, grading=args.grading_timeout)
    started = time.monotonic()
    columns = (TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task("grading", total=len(notebooks))
        rows = grade_notebooks(
            notebooks,
            limits=limits,
            workers=args.workers,
            grader_env=dict(os.environ),
            on_graded=lambda row: bar.advance(task),
        )
    seconds = time.monotonic() - started
    write_csv(rows, args.out)
    console.print(summary_table(rows))
    rate = len(rows) / seconds * 60 if seconds else 0.0
    summary = f"graded {len(rows)} notebooks in {seconds:.1f} s ({rate:.1f}/min); gradebook: {args.out}"
    console.print(summary, highlight=False, soft_wrap=True)
    return 0
