"""The instructor's subcommands of ``fleetlab``: ``assign``, ``grade`` and ``bench``.

The ``fleetlab`` command finds them through the ``fleetlab.commands`` entry point.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from fleetlab.backends.backend import BACKEND_NAMES
from fleetlab.cli.argtypes import choice_list, positive_float, positive_int
from fleetlab_instructor.bench.suite import DEFAULT_BACKENDS, DEFAULT_OUT, MEASUREMENTS
from fleetlab_instructor.bench.suite import run as run_suite


def add_commands(subparsers: Any) -> None:
    """Register ``assign``, ``grade`` and ``bench`` on the ``fleetlab`` command's subparsers."""
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
    bench = subparsers.add_parser(
        "bench",
        help="measure throughput, library overhead, the virtual clock and lab run times; save JSON",
        description="Run the benchmarks, print one table and save the figures as JSON "
        "(benchmarks report; they never fail on a missed goal).",
    )
    bench.add_argument("--out", type=Path, default=DEFAULT_OUT,
                       help=f"where to save the results (default {DEFAULT_OUT})")
    bench.add_argument("--backends", type=choice_list(BACKEND_NAMES, "backend"), default=DEFAULT_BACKENDS, metavar="NAME[,NAME]",
                       help=f"backends to measure, comma-separated (default {','.join(DEFAULT_BACKENDS)})")
    bench.add_argument("--steps", type=positive_int, default=200,
                       help="steps per pipeline and clock measurement, and per path in the overhead one "
                       "(default 200)")
    bench.add_argument("--only", type=choice_list(MEASUREMENTS, "measurement"), default=MEASUREMENTS, metavar="NAME[,NAME]",
                       help=f"measurements to run, comma-separated, from {', '.join(MEASUREMENTS)} (default all)")
    bench.set_defaults(run=_bench)


def _bench(args: argparse.Namespace, console: Console) -> int:
    return run_suite(console, only=args.only, backends=args.backends, steps=args.steps, out=args.out)


def _assign(args: argparse.Namespace, console: Console) -> int:
    from fleetlab_instructor.grading.assign import assign, stale

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
    from fleetlab_instructor.grading.grade import Limits, find_notebooks, grade_notebooks
    from fleetlab_instructor.grading.gradebook import summary_table, write_csv

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
