"""The gradebook: one row per learner, one column per check, a row of maximum points; and a terminal table.

The CSV follows the layout of Canvas's gradebook export (a CSV that LMS
gradebook imports read)::

    learner,00.planes,01.heartbeat,01.visibility,total
    Points Possible,1,2,2,5
    alice,1,2,1.5,4.5
    bob,0.5,,,0.5

A plain header row; under it the ``Points Possible`` row; then one row per
learner, sorted by learner id, the id in the first column. Every cell is a
number, blank where the learner handed in no notebook of that check's lab.
The columns are every check registered for the labs the submissions' names
give, and their maximum points are the grader's own registered checks'
points: nothing a notebook reports sets a column or a maximum, and a score
is capped at its maximum. Scores only: no case names, inputs, diagnoses or
errors reach the gradebook (the feedback files say those to each learner).
An LMS matches rows by its own ids: name the submissions by LMS login.

``merge`` joins shards' gradebooks into the gradebook one unsharded run
writes, byte for byte.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.table import Table

from fleetlab.core.errors import InvalidInput
from fleetlab.core.files import write_atomically
from fleetlab.course.grading import registry
from fleetlab.course.grading.display import format_points
from fleetlab_instructor.grading.grade import GradeRow
from fleetlab_instructor.grading.submissions import Submission

LEARNER_COLUMN = "learner"
TOTAL_COLUMN = "total"
MAXIMA_ROW = "Points Possible"


@dataclass
class Gradebook:
    """``maxima``: check id -> maximum points, sorted by id. ``rows``: learner id -> check id -> points or None."""

    maxima: dict[str, float] = field(default_factory=dict)
    rows: dict[str, dict[str, float | None]] = field(default_factory=dict)


def lab_maxima(labs: Sequence[str]) -> dict[str, float]:
    """Every registered check of ``labs`` and its points, on the grader's side, sorted by id."""
    return {check.id: float(check.points) for check in sorted(
        (check for lab in sorted(set(labs)) for check in registry.checks_of(lab)), key=lambda check: check.id)}


def build(submissions: Sequence[Submission], rows: Sequence[GradeRow]) -> Gradebook:
    """The gradebook of ``rows``, graded from ``submissions`` (one row each, in the same order).

    A notebook scores only the checks of the lab its name gives, each capped
    at the grader's maximum; a check of a lab the learner handed in no
    notebook of is blank.
    """
    maxima = lab_maxima([sub.lab for sub in submissions])
    book = Gradebook(maxima, {sub.learner: dict.fromkeys(maxima) for sub in submissions})
    for sub, row in zip(submissions, rows, strict=True):
        for check_id, most in maxima.items():
            if check_id.split(".", 1)[0] == sub.lab:
                earned = min(max(row.scores.get(check_id, 0.0), 0.0), most)
                book.rows[sub.learner][check_id] = float(format_points(earned))  # as the CSV holds it
    return book


def write_csv(book: Gradebook, path: Path) -> None:
    """Write ``book`` to ``path`` atomically (a reader never sees half a file)."""
    write_atomically(path, to_csv(book))


def to_csv(book: Gradebook) -> str:
    """``book`` as the CSV text described in the module's docstring."""
    checks = list(book.maxima)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow([LEARNER_COLUMN, *checks, TOTAL_COLUMN])
    writer.writerow([MAXIMA_ROW, *(format_points(book.maxima[c]) for c in checks),
                     format_points(sum(book.maxima.values()))])
    for learner in sorted(book.rows):
        scores = book.rows[learner]
        cells = ["" if scores.get(c) is None else format_points(scores[c]) for c in checks]
        writer.writerow([learner, *cells, format_points(sum(s for s in scores.values() if s is not None))])
    return text.getvalue()


def read_csv(path: Path) -> Gradebook:
    """The gradebook ``write_csv`` wrote at ``path``; InvalidInput naming the file and what is wrong."""
    try:
        with path.open(newline="", encoding="utf-8") as file:
            lines = list(csv.reader(file))
    except OSError as exc:
        raise InvalidInput("GRADEBOOK", f"cannot read {str(path)!r} ({exc.strerror})") from None
    if len(lines) < 2 or lines[0][:1] != [LEARNER_COLUMN] or lines[0][-1:] != [TOTAL_COLUMN] \
            or lines[1][:1] != [MAXIMA_ROW]:
        raise InvalidInput("GRADEBOOK", f"{str(path)!r} is not a fleetlab gradebook",
                           hint=f"its header starts {LEARNER_COLUMN!r} and ends {TOTAL_COLUMN!r}, "
                                f"its second row starts {MAXIMA_ROW!r}")
    checks = lines[0][1:-1]
    book = Gradebook()
    for number, line in enumerate(lines[1:], start=2):
        if len(line) != len(checks) + 2:
            raise InvalidInput("GRADEBOOK",
                               f"row {number} of {str(path)!r} has {len(line)} cells, not {len(checks) + 2}")
        values = [_number(cell, path, number) for cell in line[1:-1]]
        if number == 2:
            book.maxima = {check: value or 0.0 for check, value in zip(checks, values, strict=True)}
        elif line[0] in book.rows:
            raise InvalidInput("GRADEBOOK", f"{str(path)!r} has two rows for learner {line[0]!r}")
        else:
            book.rows[line[0]] = dict(zip(checks, values, strict=True))
    return book


def merge(books: Mapping[Path, Gradebook]) -> Gradebook:
    """Join shards' gradebooks: every check of any, every learner of any.

    Raises InvalidInput when two give one check different maximum points, or
    one learner different points for one check (blank beside a number is no
    conflict: the number stays).
    """
    maxima: dict[str, float] = {}
    rows: dict[str, dict[str, float | None]] = {}
    maxima_from: dict[str, Path] = {}
    cell_from: dict[tuple[str, str], Path] = {}
    for path, book in books.items():
        for check_id, most in book.maxima.items():
            if check_id in maxima and maxima[check_id] != most:
                raise InvalidInput(MAXIMA_ROW, f"{check_id} is worth {format_points(maxima[check_id])} in "
                                   f"{str(maxima_from[check_id])!r} but {format_points(most)} in {str(path)!r}",
                                   hint="grade every shard with the same version of the course")
            maxima[check_id], maxima_from[check_id] = most, maxima_from.get(check_id, path)
        for learner, scores in book.rows.items():
            merged = rows.setdefault(learner, {})
            for check_id, points in scores.items():
                known = merged.get(check_id)
                if points is not None and known is not None and known != points:
                    raise InvalidInput(LEARNER_COLUMN, f"{learner!r} has {format_points(known)} for {check_id} in "
                                       f"{str(cell_from[learner, check_id])!r} but {format_points(points)} in "
                                       f"{str(path)!r}", hint="grade that learner in one shard only, then merge again")
                if points is not None and known is None:
                    merged[check_id], cell_from[learner, check_id] = points, path
    ordered = dict(sorted(maxima.items()))
    return Gradebook(ordered, {learner: {c: scores.get(c) for c in ordered} for learner, scores in rows.items()})


def summary_table(rows: Sequence[GradeRow], maxima: Mapping[str, float]) -> Table:
    """A rich table with one line per notebook graded, each check's maximum (``maxima``) in its header."""
    table = Table(title="fleetlab gradebook", title_justify="left")
    table.add_column("notebook", overflow="fold")
    for check_id, most in maxima.items():
        table.add_column(f"{check_id}\n/{format_points(most)}", justify="right")
    table.add_column(f"total\n/{format_points(sum(maxima.values()))}", justify="right")
    table.add_column("error", style="red", overflow="fold")
    names = short_names([row.notebook for row in rows])
    for name, row in zip(names, rows, strict=True):
        cells = [format_points(row.scores.get(c, 0)) if c in row.scores else "" for c in maxima]
        table.add_row(name, *cells, format_points(row.total), row.error)
    return table


def short_names(notebooks: Sequence[str]) -> list[str]:
    """The notebook paths without the folder they all share."""
    parents = [os.path.dirname(notebook) for notebook in notebooks]
    try:
        shared = os.path.commonpath(parents) if parents and all(parents) else ""
    except ValueError:  # absolute and relative paths mixed: nothing is shared
        shared = ""
    return [os.path.relpath(notebook, shared) if shared else notebook for notebook in notebooks]


def _number(cell: str, path: Path, row: int) -> float | None:
    if not cell.strip():
        return None
    try:
        return float(cell)
    except ValueError:
        raise InvalidInput("GRADEBOOK", f"row {row} of {str(path)!r} holds {cell!r}, not a number") from None
