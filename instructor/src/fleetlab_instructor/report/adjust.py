"""After grading, before the export: one learner's regrade, lateness and its penalty, a facilitator's overrides.

``adjust`` applies them in that order to a gradebook and returns a new one:

1. a regrade gradebook (``fleetlab grade`` of one learner's notebooks) replaces
   that learner's cells for every lab it graded;
2. a collect's manifest (``collect.manifest``'s ``Manifest.lateness``) fills the ``late`` column,
   and with a penalty (a share of the points per day late, each day begun
   counted whole) a late lab's checks lose that share, down to 0;
3. the overrides file sets a cell to the points a facilitator decided, after
   the penalty (an override is the last word), and keeps why.

The overrides file is a CSV::

    learner,check,points,reason
    grace,03.budget,2,"dispute 12 Dec: the hidden case's budget was ambiguous"

Every row needs all four; ``points`` is between 0 and the check's maximum.
Canvas's import carries no comments, so the reasons travel in their own file
beside the adjusted gradebook (``reasons_csv``): learner, check, graded, now,
reason.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fleetlab.core.errors import InvalidInput
from fleetlab.core.files import write_atomically
from fleetlab.course.grading.display import format_points
from fleetlab_instructor.collect.manifest import read_manifest
from fleetlab_instructor.report import gradebook
from fleetlab_instructor.report.gradebook import Gradebook
from fleetlab_instructor.grade.submissions import csv_cell

OVERRIDE_COLUMNS = ("learner", "check", "points", "reason")
_HINT = "an overrides file is a CSV with the header learner,check,points,reason and one decision per row"


@dataclass(frozen=True)
class Override:
    """A facilitator's decision: ``learner`` gets ``points`` for ``check``, because ``reason``."""

    learner: str
    check: str
    points: float
    reason: str


@dataclass(frozen=True)
class Overridden:
    """An override as applied: the points graded (after any penalty) and the points now."""

    override: Override
    graded: float | None


@dataclass(frozen=True)
class Adjusted:
    """What ``adjust_gradebook`` wrote: the adjusted gradebook, each override as applied, and the reasons' file."""

    book: Gradebook
    applied: list[Overridden]
    reasons: Path | None


def adjust_gradebook(grades: Path, *, out: Path, regrades: Sequence[Path] = (), collected: Path | None = None,
                     penalty: float = 0.0, overrides: Path | None = None) -> Adjusted:
    """The report stage's entry for ``fleetlab gradebook adjust``: the gradebook at ``grades`` adjusted (``adjust``)
    with the gradebooks at ``regrades``, the lateness the collect in ``collected`` says and ``penalty``, and the
    overrides file; written to ``out``, and the reasons (when any override applied) beside it."""
    book, applied = adjust(gradebook.read_csv(grades), regrades=[gradebook.read_csv(path) for path in regrades],
                           late=lateness(collected, penalty), penalty=penalty,
                           overrides=[] if overrides is None else read_overrides(overrides))
    gradebook.write_csv(book, out)
    reasons = out.with_name(out.stem + ".reasons.csv") if applied else None
    if reasons is not None:
        write_atomically(reasons, reasons_csv(applied))
    return Adjusted(book, applied, reasons)


def lateness(collected: Path | None, penalty: float) -> dict[tuple[str, str], int] | None:
    """The days late the manifest of the collect in ``collected`` says (``Manifest.lateness``); None without one.

    Raises InvalidInput for a ``penalty`` without ``collected``: lateness comes only from a collect.
    """
    if collected is None:
        if penalty:
            raise InvalidInput("--late-penalty", "needs --collected: lateness is read from a collect's manifest",
                               hint="name the --out folder of the collect made after the deadline with --on-time")
        return None
    return read_manifest(collected).lateness()


def read_overrides(path: Path) -> list[Override]:
    """The overrides at ``path``; InvalidInput naming the file, the line and the column that is wrong."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput("--overrides", f"cannot read {str(path)!r} ({exc})", hint=_HINT) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [column for column in OVERRIDE_COLUMNS if column not in (reader.fieldnames or [])]
    if missing:
        raise InvalidInput("--overrides", f"{str(path)!r} lacks the column{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(missing)}", hint=_HINT)
    overrides = []
    for line, row in enumerate(reader, start=2):
        cells = {column: (row.get(column) or "").strip() for column in OVERRIDE_COLUMNS}
        for column, cell in cells.items():
            if not cell:
                raise InvalidInput(column, f"is blank on line {line} of {str(path)!r}",
                                   hint="every override needs its learner, check, points and reason")
        try:
            points = float(cells["points"])
        except ValueError:
            points = math.nan
        if not math.isfinite(points):
            raise InvalidInput("points", f"is {cells['points']!r} on line {line} of {str(path)!r}, not a number",
                               hint=_HINT)
        overrides.append(Override(cells["learner"], cells["check"], points, cells["reason"]))
    return overrides


def adjust(book: Gradebook, *, regrades: Sequence[Gradebook] = (), late: Mapping[tuple[str, str], float] | None = None,
           penalty: float = 0.0, overrides: Sequence[Override] = ()) -> tuple[Gradebook, list[Overridden]]:
    """``book`` with ``regrades``, ``late`` (days per learner and lab, with ``penalty`` a share per day) and
    ``overrides`` applied (module docstring); and each override as applied.

    Raises InvalidInput for a regrade or an override of a learner or check ``book``
    lacks, a regrade whose maximum differs, an override outside 0 and the maximum,
    or a penalty outside 0 to 1.
    """
    if not 0 <= penalty <= 1:
        raise InvalidInput("--late-penalty", f"is {penalty:g}, not a share between 0 and 1",
                           hint="0.1 takes a tenth of a late lab's points per day late; 0 takes none")
    rows = {learner: dict(scores) for learner, scores in book.rows.items()}
    for regrade in regrades:
        for check_id, most in regrade.maxima.items():
            if book.maxima.get(check_id, most) != most:
                raise InvalidInput("--regrade", f"{check_id} is worth {format_points(most)} in the regrade but "
                                   f"{format_points(book.maxima[check_id])} in the gradebook",
                                   hint="regrade with the course version that graded the room")
        for learner, scores in regrade.rows.items():
            if learner not in rows:
                raise InvalidInput("--regrade", f"learner {learner!r} is not in the gradebook",
                                   hint="a regrade replaces a graded learner's row; grade a new learner with the room")
            rows[learner].update((c, points) for c, points in scores.items() if c in book.maxima)
    days_late: dict[str, dict[str, float]] | None = None
    if late is not None:
        days_late = {}
        for (learner, lab), days in late.items():
            if learner in rows:
                days_late.setdefault(learner, {})[lab] = days
        for learner, labs in days_late.items():
            for check_id, points in rows[learner].items():
                days = labs.get(check_id.split(".", 1)[0])
                if days and points is not None:
                    kept = max(0.0, 1.0 - penalty * math.ceil(days))
                    rows[learner][check_id] = float(format_points(points * kept))
    applied = []
    for override in overrides:
        if override.learner not in rows:
            raise InvalidInput("learner", f"{override.learner!r} of an override is not in the gradebook",
                               hint="write the learner id as the gradebook's first column holds it")
        if override.check not in book.maxima:
            raise InvalidInput("check", f"{override.check!r} of {override.learner!r}'s override is no column of the "
                               f"gradebook", hint=f"one of: {', '.join(book.maxima)}")
        most = book.maxima[override.check]
        if not 0 <= override.points <= most:
            raise InvalidInput("points", f"{format_points(override.points)} for {override.check} of "
                               f"{override.learner!r} is outside 0 to {format_points(most)}",
                               hint="an override gives points the check can give")
        applied.append(Overridden(override, rows[override.learner][override.check]))
        rows[override.learner][override.check] = override.points
    return Gradebook(dict(book.maxima), rows, days_late), applied


def reasons_csv(applied: Sequence[Overridden]) -> str:
    """The overrides as applied, with their reasons: the file kept beside the adjusted gradebook."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["learner", "check", "graded", "now", "reason"])
    for item in applied:
        graded = "" if item.graded is None else format_points(item.graded)
        writer.writerow([csv_cell(item.override.learner), item.override.check, graded,
                         format_points(item.override.points), csv_cell(item.override.reason)])
    return text.getvalue()
