"""The gradebook: a CSV with one row per notebook, and a summary table for the terminal.

Columns: ``notebook``, one per check (points earned; blank where a notebook
has no such exercise, as when one folder holds several labs), ``total``,
``error``. Scores only: no case names, inputs or diagnoses ever reach the gradebook.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from pathlib import Path

from rich.table import Table

from fleetlab.core.files import write_atomically
from fleetlab.course.grading.display import format_points
from fleetlab_instructor.grading.grade import GradeRow


def check_columns(rows: Sequence[GradeRow]) -> list[str]:
    """Every check any notebook knows of, sorted."""
    return sorted({check_id for row in rows for check_id in row.max_points})


def max_points(rows: Sequence[GradeRow]) -> dict[str, float | None]:
    """Each check's points as the notebooks reported them (None when no notebook ran it)."""
    best: dict[str, float | None] = dict.fromkeys(check_columns(rows))
    for row in rows:
        for check_id, points in row.max_points.items():
            if points is not None:
                best[check_id] = points
    return best


def cells(row: GradeRow, checks: Sequence[str]) -> list[str]:
    """A row's points per check; blank for a check its notebook does not have."""
    return [format_points(row.scores.get(check_id, 0)) if check_id in row.max_points else "" for check_id in checks]


def write_csv(rows: Sequence[GradeRow], path: Path) -> None:
    """Write the gradebook to ``path`` atomically (a reader never sees half a file)."""
    checks = check_columns(rows)
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["notebook", *checks, "total", "error"])
    for row in rows:
        writer.writerow([row.notebook, *cells(row, checks), format_points(row.total), row.error])
    write_atomically(path, text.getvalue())


def summary_table(rows: Sequence[GradeRow]) -> Table:
    """A rich table of the gradebook, with each check's maximum in its header."""
    table = Table(title="fleetlab gradebook", title_justify="left")
    table.add_column("notebook", overflow="fold")
    maxima = max_points(rows)
    for check_id, most in maxima.items():
        header = check_id if most is None else f"{check_id}\n/{format_points(most)}"
        table.add_column(header, justify="right")
    possible = sum(points for points in maxima.values() if points is not None)
    table.add_column(f"total\n/{format_points(possible)}", justify="right")
    table.add_column("error", style="red", overflow="fold")
    names = short_names([row.notebook for row in rows])
    for name, row in zip(names, rows, strict=True):
        table.add_row(name, *cells(row, list(maxima)), format_points(row.total), row.error)
    return table


def short_names(notebooks: Sequence[str]) -> list[str]:
    """The notebook paths without the folder they all share."""
    parents = [os.path.dirname(notebook) for notebook in notebooks]
    try:
        shared = os.path.commonpath(parents) if parents and all(parents) else ""
    except ValueError:  # absolute and relative paths mixed: nothing is shared
        shared = ""
    return [os.path.relpath(notebook, shared) if shared else notebook for notebook in notebooks]
