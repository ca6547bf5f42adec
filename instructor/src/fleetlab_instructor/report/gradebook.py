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
A learner id that a spreadsheet would read as a formula (``=``, ``+``,
``-``, ``@``) is written with a leading ``'`` (``csv_cell``).

A gradebook adjusted with a collect's manifest (``adjust``) has a ``late``
column before ``total``: the labs a learner handed in late and by how many
days (``03: 1.5 d``), blank when none was; its ``Points Possible`` cell is
blank. ``read_csv`` reads either layout back.

A run given ``--run RUN`` (a sharded run must be) also writes a shard file,
``RUN.shard-I-of-N.json`` beside its gradebook: the run, I and N, its
gradebook, each notebook's row with its cases (what the room report needs)
and intake's notes. Like the journal it holds hidden cases' diagnoses: it is
the grader's (mode 0600), never a learner's. ``merge_shards`` joins the shard files of one run into
the gradebook one unsharded run writes, byte for byte, and refuses a set
that is not exactly shards 1 to N of one run.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from pathlib import Path

from rich.table import Table
from rich.text import Text

from fleetlab.core.errors import InvalidInput
from fleetlab.core.files import write_atomically
from fleetlab.course.grading import registry
from fleetlab.course.grading.display import format_points
from fleetlab_instructor.grade.grade import CheckReport, GradeRow, case_report
from fleetlab_instructor.grade.submissions import Shard, Submission, csv_cell, parse_run, parse_shard

LEARNER_COLUMN = "learner"
LATE_COLUMN = "late"
TOTAL_COLUMN = "total"
MAXIMA_ROW = "Points Possible"


@dataclass
class Gradebook:
    """``maxima``: check id -> maximum points, sorted by id. ``rows``: learner id -> check id -> points or None.

    ``late``: learner id -> lab -> days late, or None when no manifest was read (no ``late`` column).
    """

    maxima: dict[str, float] = field(default_factory=dict)
    rows: dict[str, dict[str, float | None]] = field(default_factory=dict)
    late: dict[str, dict[str, float]] | None = None


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
    late = [] if book.late is None else [LATE_COLUMN]
    writer.writerow([LEARNER_COLUMN, *checks, *late, TOTAL_COLUMN])
    writer.writerow([MAXIMA_ROW, *(format_points(book.maxima[c]) for c in checks), *([""] * len(late)),
                     format_points(sum(book.maxima.values()))])
    for learner in sorted(book.rows):
        scores = book.rows[learner]
        cells = ["" if scores.get(c) is None else format_points(scores[c]) for c in checks]
        said = [] if book.late is None else [late_cell(book.late.get(learner, {}))]
        writer.writerow([csv_cell(learner), *cells, *said,
                         format_points(sum(s for s in scores.values() if s is not None))])
    return text.getvalue()


def late_cell(days_by_lab: Mapping[str, float]) -> str:
    """The ``late`` cell: each lab handed in late and its days, ``03: 1.5 d; 07: 2 d``, or blank."""
    return "; ".join(f"{lab}: {format_points(days)} d" for lab, days in sorted(days_by_lab.items()))


def read_csv(path: Path) -> Gradebook:
    """The gradebook ``to_csv`` wrote at ``path``; InvalidInput naming the file, the line and the cell that is wrong."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput("GRADES", f"cannot read {str(path)!r} ({exc})", hint=GRADES_HINT) from None
    return read_csv_text(text, str(path))


def read_csv_text(text: str, source: str = "the gradebook") -> Gradebook:
    """The gradebook ``to_csv`` wrote as ``text`` (read from ``source``, as errors name it)."""
    try:
        lines = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        raise InvalidInput("GRADES", f"{source!r} is not CSV ({exc})", hint=GRADES_HINT) from None
    if len(lines) < 2 or lines[0][:1] != [LEARNER_COLUMN] or lines[0][-1:] != [TOTAL_COLUMN] \
            or lines[1][:1] != [MAXIMA_ROW]:
        raise InvalidInput("GRADES", f"{source!r} does not start with a {LEARNER_COLUMN!r} header and a "
                           f"{MAXIMA_ROW!r} row", hint=GRADES_HINT)
    header = lines[0]
    has_late = header[-2:-1] == [LATE_COLUMN]
    checks = header[1:-2 if has_late else -1]

    def number(cell: str, line: int, column: str) -> float | None:
        try:
            return None if cell == "" else float(cell)
        except ValueError:
            raise InvalidInput(column, f"is {cell!r} on line {line} of {source!r}, not a number",
                               hint=GRADES_HINT) from None

    book = Gradebook({c: number(cell, 2, c) or 0.0 for c, cell in zip(checks, lines[1][1:], strict=False)},
                     late={} if has_late else None)
    for line, cells in enumerate(lines[2:], start=3):
        if len(cells) != len(header):
            raise InvalidInput("GRADES", f"line {line} of {source!r} has {len(cells)} cells, the header "
                               f"{len(header)}", hint=GRADES_HINT)
        learner = cells[0][1:] if cells[0][:1] == "'" and csv_cell(cells[0][1:]) == cells[0] else cells[0]
        book.rows[learner] = {c: number(cell, line, c) for c, cell in zip(checks, cells[1:], strict=False)}
        if has_late and cells[-2]:
            book.late[learner] = _read_late(cells[-2], line, source)
    return book


def _read_late(cell: str, line: int, source: str) -> dict[str, float]:
    try:
        return {lab.strip(): float(days.strip().removesuffix(" d"))
                for lab, days in (part.split(":", 1) for part in cell.split(";"))}
    except ValueError:
        raise InvalidInput(LATE_COLUMN, f"is {cell!r} on line {line} of {source!r}, not '03: 1.5 d; ...'",
                           hint=GRADES_HINT) from None


GRADES_HINT = "pass a gradebook CSV that `fleetlab grade --out` or `fleetlab gradebook merge/adjust --out` wrote"


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
    """A rich table with one line per notebook graded, each check's maximum (``maxima``) in its header.

    A notebook's name and its error are the learner's text, shown as it is.
    """
    table = Table(title="fleetlab gradebook", title_justify="left")
    table.add_column("notebook", overflow="fold")
    for check_id, most in maxima.items():
        table.add_column(f"{check_id}\n/{format_points(most)}", justify="right")
    table.add_column(f"total\n/{format_points(sum(maxima.values()))}", justify="right")
    table.add_column("error", style="red", overflow="fold")
    names = short_names([row.notebook for row in rows])
    for name, row in zip(names, rows, strict=True):
        cells = [format_points(row.scores.get(c, 0)) if c in row.scores else "" for c in maxima]
        table.add_row(Text(name), *cells, format_points(row.total), Text(row.error))  # as text: never rich markup
    return table


def short_names(notebooks: Sequence[str]) -> list[str]:
    """The notebook paths without the folder they all share."""
    parents = [os.path.dirname(notebook) for notebook in notebooks]
    try:
        shared = os.path.commonpath(parents) if parents and all(parents) else ""
    except ValueError:  # absolute and relative paths mixed: nothing is shared
        shared = ""
    return [os.path.relpath(notebook, shared) if shared else notebook for notebook in notebooks]


SHARD_KIND = "fleetlab grading shard"
SHARD_HINT = "pass the RUN.shard-I-of-N.json files that `fleetlab grade --shard I/N --run RUN` wrote"


@dataclass
class ShardFile:
    """One shard's part of a run: its gradebook, each notebook graded with its row, and intake's notes."""

    run: str
    shard: Shard
    book: Gradebook
    graded: list[tuple[Submission, GradeRow]]
    notes: list[str]


def shard_path(folder: Path, run: str, shard: Shard) -> Path:
    """Where shard ``shard`` of run ``run`` is written: ``folder/RUN.shard-I-of-N.json``."""
    return folder / f"{run}.shard-{shard.index}-of-{shard.count}.json"


def write_shard(part: ShardFile, folder: Path) -> Path:
    """Write ``part`` atomically to its ``shard_path`` under ``folder``; return that path."""
    path = shard_path(folder, part.run, part.shard)
    write_atomically(path, json.dumps({
        "kind": SHARD_KIND, "run": part.run, "shard": part.shard.index, "of": part.shard.count,
        "maxima": part.book.maxima, "rows": part.book.rows,
        "graded": [{"learner": sub.learner, "lab": sub.lab, "path": str(sub.path), "row": row_json(row)}
                   for sub, row in part.graded],
        "notes": part.notes,
    }, indent=1))
    return path


def read_shard(path: Path) -> ShardFile:
    """The shard file at ``path``; InvalidInput naming the file and the field that is wrong."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidInput("SHARD", f"cannot read {str(path)!r} ({exc.strerror})", hint=SHARD_HINT) from None
    try:
        data = json.loads(raw)
        if data["kind"] != SHARD_KIND:
            raise ValueError(f"kind is {data['kind']!r}")
        graded = [(Submission(Path(item["path"]), str(item["learner"]), str(item["lab"])), row_from_json(item["row"]))
                  for item in data["graded"]]
        book = Gradebook({str(c): float(most) for c, most in data["maxima"].items()},
                         {str(learner): {str(c): None if v is None else float(v) for c, v in scores.items()}
                          for learner, scores in data["rows"].items()})
        return ShardFile(parse_run(data["run"]), parse_shard(f"{data['shard']}/{data['of']}"), book, graded,
                         [str(note) for note in data["notes"]])
    except (KeyError, TypeError, ValueError, AttributeError, InvalidInput) as exc:
        raise InvalidInput("SHARD", f"{str(path)!r} is not a fleetlab shard file ({type(exc).__name__}: {exc})",
                           hint=SHARD_HINT) from None


def merge_shards(parts: Mapping[Path, ShardFile]) -> ShardFile:
    """Join shards 1 to N of one run into the whole run's gradebook, rows and notes (``Shard(1, 1)``).

    Raises InvalidInput when the files are of two runs or two counts, hold
    one shard twice, or lack a shard (naming every missing one), and as
    ``merge`` does for a learner or a maximum that differs.
    """
    if not parts:
        raise InvalidInput("SHARD", "no shard file given", hint=SHARD_HINT)
    (first_path, first), *_ = parts.items()
    seen: dict[int, Path] = {}
    for path, part in parts.items():
        if (part.run, part.shard.count) != (first.run, first.shard.count):
            raise InvalidInput("SHARD", f"{str(path)!r} is shard {part.shard} of run {part.run!r} but "
                               f"{str(first_path)!r} is shard {first.shard} of run {first.run!r}",
                               hint="merge the shards of one run, all graded with the same N")
        if part.shard.index in seen:
            raise InvalidInput("SHARD", f"shard {part.shard} of run {part.run!r} is given twice: "
                               f"{str(seen[part.shard.index])!r} and {str(path)!r}", hint="pass each shard once")
        seen[part.shard.index] = path
    count = first.shard.count
    missing = [Shard(index, count) for index in range(1, count + 1) if index not in seen]
    if missing:
        named = ", ".join(f"{shard} ({shard_path(Path(), first.run, shard).name})" for shard in missing)
        raise InvalidInput("SHARD", f"run {first.run!r} lacks shard{'s' if len(missing) > 1 else ''} {named}: "
                           f"{len(seen)} of {count} given",
                           hint=f"grade each missing shard with `fleetlab grade ... --shard I/{count} --run "
                                f"{first.run}`, then merge every shard")
    ordered = [parts[seen[index]] for index in range(1, count + 1)]
    book = merge({seen[part.shard.index]: part.book for part in ordered})
    graded = [pair for part in ordered for pair in part.graded]
    notes = sorted({note for part in ordered for note in part.notes})
    return ShardFile(first.run, Shard(1, 1), book, graded, notes)


def row_json(row: GradeRow) -> dict[str, Any]:
    """``row`` as JSON data (``row_from_json`` reads it back)."""
    return dataclasses.asdict(row)


def row_from_json(data: Mapping[str, Any]) -> GradeRow:
    """The GradeRow ``row_json`` made ``data`` of; KeyError, TypeError or ValueError when it is not one."""
    checks = {str(check_id): CheckReport(str(report["status"]), str(report["diagnosis"]),
                                         tuple(case_report(case) for case in report["cases"]))
              for check_id, report in data["checks"].items()}
    return GradeRow(str(data["notebook"]), {str(c): float(v) for c, v in data["scores"].items()},
                    {str(c): None if v is None else float(v) for c, v in data["max_points"].items()},
                    str(data["error"]), checks)
