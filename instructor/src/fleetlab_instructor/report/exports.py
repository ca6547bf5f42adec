"""Grades where they live: a Canvas gradebook import, and Gradescope's autograder results.

Canvas. The facilitator exports the course's gradebook from Canvas (Grades,
Export): that CSV is the roster. Its first five columns identify a student
(``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``), each
assignment's column is headed ``Name (assignment id)``, and its second row
may be ``Points Possible``. A learner id (a hub user name) is matched to the
student whose ``SIS Login ID``, else ``SIS User ID``, equals it, ignoring case.
Each lab is matched to the one assignment column whose name says ``Lab NN``
(``Lab 03 (12345)``, ``lab 3 (12345)``), unless ``columns`` names it. The
import keeps the roster's five identifying columns and that header, so Canvas
updates the assignment instead of making a new one: one row per matched
student with the lab's points (the sum of its checks; blank when the learner
handed in no notebook of that lab, which Canvas leaves as it was), under a
``Points Possible`` row. Every cell from a roster or a learner id goes
through ``csv_cell``.

Gradescope. ``results_json`` is one submission's ``results.json`` as
Gradescope's autograder specification describes it: ``score`` (the
gradebook's, which Gradescope takes over the tests' sum), ``output``, and
``tests``: per check, one test per case (``name``, ``score``, ``max_score``,
``status``, ``output``, ``visibility``). A public case is ``visible``; a
hidden case says only what the feedback file says of it (never its inputs),
with the visibility the course chooses (``after_due_date`` or ``hidden``).
An all-or-nothing check's cases are worth 0 each, its points in one more test.
A gradebook with a ``late`` column (``adjust`` with a collect's manifest) says
the learner's late labs in ``output`` (``late: 01: 1 d``), its ``score`` the
points after any penalty.
``write_autograder`` writes the autograder archive around it (``setup.sh``,
``run_autograder`` and the course's source).
"""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fleetlab.core.errors import InvalidInput
from fleetlab.core.files import write_atomically
from fleetlab.course.grading import registry
from fleetlab.course.grading.display import format_points
from fleetlab_instructor.grade.grade import GradeRow
from fleetlab_instructor.grade.submissions import Submission, csv_cell
from fleetlab_instructor.report import gradebook
from fleetlab_instructor.report.adjust import adjust, lateness
from fleetlab_instructor.report.feedback import NOT_GRADED, case_line, not_attempted, public_cases_pass
from fleetlab_instructor.report.gradebook import Gradebook, late_cell

CANVAS_ID_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_MAXIMA = "Points Possible"
ASSIGNMENT_HEADER = re.compile(r"^(?P<name>.*\S)\s*\((?P<id>\d+)\)$")
_ROSTER_HINT = "pass the CSV that Canvas's Grades > Export wrote, with an assignment column per lab"


def write_canvas(grades: Path, *, roster: Path, out: Path, columns: Mapping[str, str]) -> Gradebook:
    """The report stage's entry for ``fleetlab gradebook canvas``: the gradebook at ``grades`` written to ``out`` as
    the Canvas import for the roster at ``roster`` (``canvas_import``); the gradebook."""
    book = gradebook.read_csv(grades)
    header, students = read_roster(roster)
    write_atomically(out, canvas_import(book, header, students, columns))
    return book


def write_results(shard: Path, *, out: Path, learner: str | None = None, collected: Path | None = None,
                  penalty: float = 0.0, hidden_visibility: str = "after_due_date") -> dict[str, Any]:
    """The report stage's entry for ``fleetlab gradebook gradescope``: ``learner``'s results.json (``results_json``)
    from the shard file at ``shard``, with the lateness the collect in ``collected`` says and ``penalty`` taken,
    written to ``out``; the results. ``learner`` may be None when the shard holds one learner only."""
    part = gradebook.read_shard(shard)
    graded = part.graded if learner is None else [(sub, row) for sub, row in part.graded if sub.learner == learner]
    if not graded:
        raise InvalidInput("--learner", f"{learner!r} has no notebook in {str(shard)!r}",
                           hint=f"one of: {', '.join(sorted({sub.learner for sub, _ in part.graded}))}")
    book, _ = adjust(part.book, late=lateness(collected, penalty), penalty=penalty)
    results = results_json(graded, book, hidden_visibility=hidden_visibility)
    write_atomically(out, json.dumps(results, indent=1))
    return results


def read_roster(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The header and the students of the Canvas gradebook export at ``path`` (its ``Points Possible`` row and any
    row naming no student left out); InvalidInput naming the column that is missing."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput("--roster", f"cannot read {str(path)!r} ({exc})", hint=_ROSTER_HINT) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = list(reader.fieldnames or [])
    missing = [column for column in CANVAS_ID_COLUMNS if column not in header]
    if missing:
        raise InvalidInput("--roster", f"{str(path)!r} lacks Canvas's column{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(missing)} (its header: {header})", hint=_ROSTER_HINT)
    students = [{column: (row.get(column) or "").strip() for column in header} for row in reader
                if (row.get("Student") or "").strip() != CANVAS_MAXIMA and (row.get("ID") or "").strip()]
    return header, students


def lab_columns(header: Sequence[str], labs: Sequence[str], columns: Mapping[str, str]) -> dict[str, str]:
    """lab -> the roster's assignment column for it: ``columns``' choice, else the one named ``Lab NN``."""
    assignments = [column for column in header if ASSIGNMENT_HEADER.match(column)]
    chosen = {}
    for lab in labs:
        if lab in columns:
            if columns[lab] not in header:
                raise InvalidInput("--column", f"{columns[lab]!r} for lab {lab} is no column of the roster",
                                   hint=f"one of: {', '.join(assignments)}")
            chosen[lab] = columns[lab]
            continue
        said = re.compile(rf"\blab\s*0*{int(lab)}\b", re.IGNORECASE)
        found = [column for column in assignments if said.search(ASSIGNMENT_HEADER.match(column)["name"])]
        if len(found) != 1:
            what = "no assignment column" if not found else f"{len(found)} assignment columns ({', '.join(found)})"
            raise InvalidInput("--column", f"lab {lab}: the roster has {what} named 'Lab {lab} (id)'",
                               hint=f"name its Canvas column: --column {lab}='Lab {lab} (12345)'")
        chosen[lab] = found[0]
    return chosen


def canvas_import(book: Gradebook, header: Sequence[str], students: Sequence[Mapping[str, str]],
                  columns: Mapping[str, str] | None = None) -> str:
    """The Canvas import CSV of ``book`` for the roster (``read_roster``): see the module's docstring.

    Raises InvalidInput naming every learner the roster does not hold, or one it holds twice.
    """
    labs = sorted({check_id.split(".", 1)[0] for check_id in book.maxima})
    chosen = lab_columns(header, labs, columns or {})
    by_id: dict[str, list[int]] = {}
    for index, student in enumerate(students):
        for column in ("SIS Login ID", "SIS User ID"):
            if student[column]:
                by_id.setdefault(student[column].casefold(), []).append(index)
    matched: dict[int, str] = {}
    unmatched = []
    for learner in sorted(book.rows):
        found = sorted(set(by_id.get(learner.casefold(), [])))
        if len(found) > 1:
            raise InvalidInput("--roster", f"learner {learner!r} matches {len(found)} students' SIS ids",
                               hint="give each student a distinct SIS Login ID in Canvas")
        if found:
            matched[found[0]] = learner
        else:
            unmatched.append(learner)
    if unmatched:
        raise InvalidInput("--roster", f"no student's SIS Login ID or SIS User ID is {', '.join(map(repr, unmatched))}",
                           hint="name each learner's hub account by their SIS Login ID, or add them to the Canvas "
                                "course and export its gradebook again")
    lab_max = {lab: sum(most for c, most in book.maxima.items() if c.startswith(f"{lab}.")) for lab in labs}
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow([*CANVAS_ID_COLUMNS, *(chosen[lab] for lab in labs)])
    writer.writerow([CANVAS_MAXIMA, *([""] * (len(CANVAS_ID_COLUMNS) - 1)), *(format_points(lab_max[lab])
                                                                               for lab in labs)])
    for index, learner in sorted(matched.items()):
        scores = book.rows[learner]
        cells = []
        for lab in labs:
            points = [p for c, p in scores.items() if c.startswith(f"{lab}.") and p is not None]
            cells.append(format_points(sum(points)) if points else "")
        writer.writerow([*(csv_cell(students[index][column]) for column in CANVAS_ID_COLUMNS), *cells])
    return text.getvalue()


VISIBILITIES = ("after_due_date", "hidden")


def results_json(graded: Sequence[tuple[Submission, GradeRow]], book: Gradebook, *,
                 hidden_visibility: str = "after_due_date") -> dict[str, Any]:
    """Gradescope's ``results.json`` for one learner's graded notebooks (module docstring).

    Raises InvalidInput when ``graded`` holds no notebook or another learner's too.
    """
    if hidden_visibility not in VISIBILITIES:
        raise InvalidInput("--hidden", f"is {hidden_visibility!r}", hint=f"one of: {', '.join(VISIBILITIES)}")
    learners = sorted({sub.learner for sub, _ in graded})
    if len(learners) != 1:
        raise InvalidInput("SHARD", f"holds {len(learners)} learners ({', '.join(map(repr, learners))}); a "
                           "Gradescope submission is one learner's",
                           hint="name one with --learner, or grade one submission per run")
    (learner,) = learners
    scores = book.rows.get(learner, {})
    tests: list[dict[str, Any]] = []
    late = (book.late or {}).get(learner)
    output = [f"late: {late_cell(late)}"] if late else []
    for sub, row in graded:
        if row.error:
            output.append(f"{sub.path.name}: problems while grading: {row.error}")
        for check_id, most in book.maxima.items():
            if check_id.split(".", 1)[0] == sub.lab:
                tests += _check_tests(check_id, most, scores.get(check_id) or 0.0, row, hidden_visibility)
    return {"score": float(format_points(sum(p for p in scores.values() if p is not None))),
            "output": "\n".join(output or ["Graded by fleetlab: each case of each check below."]),
            "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}


def _check_tests(check_id: str, most: float, earned: float, row: GradeRow, hidden_visibility: str) -> list[dict]:
    check = registry.get_check(check_id)
    title = f"{check_id} ({check.title})"
    report = row.checks.get(check_id)
    if report is None or not report.cases:
        said = NOT_GRADED if report is None else not_attempted(check_id, report.diagnosis, row.error) \
            if report.status == "not yet" else ": ".join(filter(None, (report.status, report.diagnosis)))
        return [_test(title, earned, most, said, "visible")]
    case_points = 0.0 if check.all_or_nothing else most / len(report.cases)
    tests, hidden = [], 0
    public_passed = public_cases_pass(report.cases)
    for case in report.cases:
        hidden += case.hidden
        passed = case.status == "pass" and earned > 0
        name = f"{title}: hidden case {hidden}" if case.hidden else f"{title}: public case {case.name}"
        tests.append(_test(name, case_points if passed else 0.0, case_points,
                           case_line(check_id, case, hidden, public_passed=public_passed).removeprefix("- "),
                           hidden_visibility if case.hidden else "visible"))
    if check.all_or_nothing:
        tests.append(_test(f"{title}: every case together", earned, most, check.scoring(), "visible"))
    return tests


def _test(name: str, score: float, most: float, output: str, visibility: str) -> dict[str, Any]:
    return {"name": name, "score": float(format_points(score)), "max_score": float(format_points(most)),
            "status": "passed" if score >= most else "failed", "output": output, "visibility": visibility}


SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image: it installs the course
# (the fleetlab library, its tooling and the instructor's grader) from source/ into a venv.
set -euo pipefail
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --quiet /autograder/source/course /autograder/source/course/tools \\
  /autograder/source/course/instructor
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this once per submission, in a fresh container of its own. That container is
# the sandbox here: fleetlab's own sandbox needs user namespaces, which Gradescope's containers
# do not grant, so the grade runs --unsandboxed. The learner's code can still read what this
# container holds (the hidden cases in /autograder/source among it), as with every Gradescope
# autograder; grade with `fleetlab grade` on your own machine where that matters.
# AUTOGRADER_ROOT is Gradescope's /autograder unless set (a test sets it).
set -uo pipefail
LAB={lab}
VISIBILITY={visibility}
root=${{AUTOGRADER_ROOT:-/autograder}}
work=$(mktemp -d)
mkdir -p "$work/submissions/learner" "$root/results"
notebook=$(find "$root/submission" -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' | sort | head -n 1)
if [ -z "$notebook" ]; then
  echo '{{"score": 0.0, "output": "No notebook was submitted: upload your lab notebook (.ipynb).", "tests": []}}' \\
    > "$root/results/results.json"
  exit 0
fi
cp "$notebook" "$work/submissions/learner/${{LAB}}_submitted.ipynb"
cd "$work"
"$root/venv/bin/fleetlab" grade submissions --unsandboxed --run gradescope --out grades.csv --feedback feedback
"$root/venv/bin/fleetlab" gradebook gradescope gradescope.shard-1-of-1.json --hidden "$VISIBILITY" \\
  --out "$root/results/results.json"
"""

_SOURCE_PARTS = ("pyproject.toml", "README.md", "LICENSE", "src", "tools", "instructor")


def write_autograder(course: Path, out: Path, *, lab: str, hidden_visibility: str = "after_due_date") -> int:
    """Write Gradescope's autograder archive for ``lab`` to ``out``; return how many files it holds.

    At its root ``setup.sh`` and ``run_autograder``; under ``course/`` the parts of
    the course ``setup.sh`` installs (``_SOURCE_PARTS``, without caches).
    """
    if not re.fullmatch(r"\d\d", lab) or not registry.checks_of(lab):
        raise InvalidInput("--lab", f"is {lab!r}, no lab of the course with checks", hint="a lab's two digits: 03")
    if hidden_visibility not in VISIBILITIES:
        raise InvalidInput("--hidden", f"is {hidden_visibility!r}", hint=f"one of: {', '.join(VISIBILITIES)}")
    missing = [part for part in _SOURCE_PARTS if not (course / part).exists()]
    if missing:
        raise InvalidInput("--course", f"{str(course)!r} lacks {', '.join(missing)}",
                           hint="pass the root of the course's repository")
    files = 0
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in (("setup.sh", SETUP_SH),
                           ("run_autograder", RUN_AUTOGRADER.format(lab=lab, visibility=hidden_visibility))):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            archive.writestr(info, text)
            files += 1
        for part in _SOURCE_PARTS:
            root = course / part
            for path in sorted([root] if root.is_file() else root.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts and ".egg-info" not in str(path):
                    archive.write(path, f"course/{path.relative_to(course)}")
                    files += 1
    return files
