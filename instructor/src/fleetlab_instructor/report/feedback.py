"""Feedback per learner: one markdown file saying, per notebook and check, what each case found.

A public case is shown as the notebook shows it: its name, its status, its
diagnosis. A hidden case is never named and its inputs never appear: a
failed one says the misconception it points to: the name of the instructor's
catalogue entry (a known wrong answer) whose mistake key the harness reported
for it, or the name the catalogue gives a key its entries share
(``InstructorSide.label_of``; never found by searching the diagnosis), with
any value that only the hidden cases hold blanked out. A failure no entry's
key names is told in the runner's words (a time-out; the error the learner's
code raised, by its name only); else, only when the public cases all pass,
as what hidden cases are there to catch (an answer fitted to the public
cases); else as a mistake the public cases' diagnoses show. An exercise with no answer to
judge is "not attempted", or, when a cell of that exercise raised a syntax
error, that error. A problem while grading (a raising cell, a hang, a dead
kernel) is said as the gradebook's terminal table says it, each cell named as
the learner sees it (``cells.cell_name``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from fleetlab.core.errors import InvalidInput
from fleetlab.core.files import write_atomically
from fleetlab.course.grading import registry
from fleetlab.course.grading.display import format_points
from fleetlab.course.grading.registry import readable_points
from fleetlab.course.grading.runner import TOO_BUSY
from fleetlab_instructor.checks import full_check, side_of
from fleetlab_instructor.grade.grade import CaseReport, GradeRow
from fleetlab_instructor.report.gradebook import Gradebook
from fleetlab_instructor.grade.submissions import Submission, learner_file_name

FITTED = ("it fails on inputs the public cases do not show: the answer may fit the public cases "
          "(values written in for them) rather than follow the rule the exercise states")
BLANK = "…"
RAISED = re.compile(r"^your code raised (?P<error>[A-Za-z_][\w.]*)")
HIDDEN_STATUS_SAYS = {
    "error": " (the check itself broke on this case: a fleetlab bug, never your answer's fault)",
    "skipped": " (not run: the check ran out of time on an earlier case)",
}
MACHINE_TOO_BUSY = "not judged: the grading machine was too busy to give your code its time; ask for a regrade"
UNNAMED = ("a mistake the catalogue does not name; the public cases fail too, and their diagnoses above may show "
           "what it is")
NOT_ATTEMPTED = "not attempted"
NOT_GRADED = "not graded: no answer to it reached the grader (run its `check()` cell, and keep it)"


def write_feedback(book: Gradebook, submissions: Sequence[Submission], rows: Sequence[GradeRow],
                   folder: Path) -> list[Path]:
    """Write ``<learner>.md`` under ``folder`` for each learner of ``submissions``; return the paths written.

    The file's name is the learner id escaped (``learner_file_name``): never a
    path outside ``folder``, whatever the id holds.
    """
    by_learner: dict[str, list[tuple[Submission, GradeRow]]] = {}
    for sub, row in zip(submissions, rows, strict=True):
        by_learner.setdefault(sub.learner, []).append((sub, row))
    written = []
    for learner, graded in sorted(by_learner.items()):
        path = folder / learner_file_name(learner, ".md")
        write_atomically(path, feedback_text(learner, graded, book.maxima))
        written.append(path)
    return written


def feedback_text(learner: str, graded: Sequence[tuple[Submission, GradeRow]], maxima: Mapping[str, float]) -> str:
    """One learner's feedback, in markdown: a section per notebook, a subsection per check of its lab."""
    lines = [f"# Feedback for {learner}", ""]
    for sub, row in graded:
        lines += [f"## {sub.path.name} (lab {sub.lab})", ""]
        if row.error:
            lines += [f"Problems while grading: {row.error}", ""]
        for check_id, most in maxima.items():
            if check_id.split(".", 1)[0] == sub.lab:
                lines += _check_section(check_id, most, row)
    return "\n".join(lines)


def _check_section(check_id: str, most: float, row: GradeRow) -> list[str]:
    earned = min(max(row.scores.get(check_id, 0.0), 0.0), most)
    title = registry.get_check(check_id).title
    lines = [f"### {check_id} ({title}): {readable_points(earned)}/{readable_points(most)} points", ""]
    report = row.checks.get(check_id)
    if report is None:
        return [*lines, NOT_GRADED, ""]
    if report.status == "not yet":
        return [*lines, not_attempted(check_id, report.diagnosis, row.error), ""]
    if not report.cases:  # refused before any case ran: no input named
        said = report.diagnosis if report.diagnosis.startswith(report.status) else \
            ": ".join(filter(None, (report.status, report.diagnosis)))
        return [*lines, said, ""]
    hidden = 0
    public_passed = public_cases_pass(report.cases)
    for case in report.cases:
        hidden += case.hidden
        lines.append(case_line(check_id, case, hidden, public_passed=public_passed))
    return [*lines, ""]


def public_cases_pass(cases: Sequence[CaseReport]) -> bool:
    """Whether a check's verdict holds public cases and each of them passed."""
    public = [case for case in cases if not case.hidden]
    return bool(public) and all(case.status == "pass" for case in public)


def not_attempted(check_id: str, diagnosis: str, error: str) -> str:
    """What an exercise with no answer to judge says: the learner's syntax error when a cell of that exercise
    (named as ``cells.cell_name`` names it, in the notebook's ``error``) raised one; else "not attempted"."""
    syntax = re.search(rf"(code cell \d+ \(exercise {re.escape(check_id)}\)) raised "
                       rf"((?:SyntaxError|IndentationError|TabError)[^;]*)", error)
    if syntax:
        return (f"a syntax error in your {syntax[1]}: {syntax[2]}. The cell never ran, so its answer was not "
                "defined: fix the line it names and run the cell")
    if diagnosis.startswith(NOT_ATTEMPTED):
        return diagnosis
    return f"{NOT_ATTEMPTED}: the answer is as it was handed out (its `...` or `raise NotImplementedError` is there)"


def case_line(check_id: str, case: CaseReport, hidden_number: int, *, public_passed: bool) -> str:
    """One case as a learner may read it: a public case by name, a hidden one by number and what it points to
    (``public_passed``: every public case of its check passed)."""
    if not case.hidden:
        said = f": {case.diagnosis}" if case.diagnosis else ""
        return f"- public case *{case.name}*: {case.status}{said}"
    if case.status == "error" and case.diagnosis.startswith(TOO_BUSY):
        return f"- hidden case {hidden_number}: {case.status} ({MACHINE_TOO_BUSY})"
    if case.status != "fail":
        return f"- hidden case {hidden_number}: {case.status}{HIDDEN_STATUS_SAYS.get(case.status, '')}"
    said = misconception(check_id, case, public_passed=public_passed)
    return f"- hidden case {hidden_number}: fail; it points to: {said}"


def misconception(check_id: str, case: CaseReport, *, public_passed: bool) -> str:
    """What failed hidden ``case`` of ``check_id`` points to, never its inputs (module docstring).

    ``public_passed``: every public case of the check passed (only then may an
    unnamed failure be called an answer fitted to the public cases).
    """
    try:
        label = side_of(check_id).label_of(case.mistake)
        values = hidden_only_values(check_id)
    except InvalidInput:  # a check with no instructor's side: no catalogue, no hidden values known
        label, values = "", set()
    if label:
        return blank_out(label, values)
    if case.diagnosis.startswith("timed out"):  # the runner's words: a limit and the learner's own code, no input
        return blank_out(case.diagnosis, values)
    if raised := RAISED.match(case.diagnosis):  # the runner's words (``learner.raised``): an error, not a fit
        return f"your code raised {raised['error']} on an input the public cases do not show"
    return FITTED if public_passed else UNNAMED


def hidden_only_values(check_id: str) -> set[str]:
    """Every value (as text) that a hidden case of ``check_id`` holds and no public case does."""
    check = full_check(check_id)
    public = set(_values(check.public))
    return {value for value in _values(check.hidden) if value not in public}


def blank_out(text: str, values: Iterable[str]) -> str:
    """``text`` with each of ``values`` standing alone (not inside a longer word or number) replaced by ``BLANK``."""
    for value in sorted(values, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.]){re.escape(value)}(?![\w]|\.\d)", BLANK, text, flags=re.IGNORECASE)
    return text


def _values(item: Any) -> Iterator[str]:
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        for part in dataclasses.fields(item):
            yield from _values(getattr(item, part.name))
    elif isinstance(item, str):
        if item.strip():
            yield item.strip()
    elif isinstance(item, bool) or item is None:
        return
    elif isinstance(item, int | float):
        yield format_points(item)
        yield str(item)
    elif isinstance(item, Mapping):
        for key, value in item.items():
            yield from _values(key)
            yield from _values(value)
    elif isinstance(item, Iterable):
        for value in item:
            yield from _values(value)
