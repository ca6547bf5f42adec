"""The room report: what a room of learners got right and wrong, for the facilitator's screen.

``fleetlab grade ... --report room.html`` writes one self-contained HTML page
(the plot inlined, no network): per check, the share of the learners who
handed in its lab that earned every point, and the misconceptions most of
them share. A misconception is named as the feedback files name it: the
instructor's catalogue entry (a known wrong answer) whose mistake key a failed
case reported (``CaseOutcome.mistake``; never found by searching the
diagnosis), or, for a failed public case no entry's key names, the first
sentence of its diagnosis. A hidden case's inputs never appear (``feedback.misconception``
blanks them). Each learner counts once per misconception and check; equal
counts are ordered by name, so a sharded run's report says what an
unsharded one does. Last come intake's notes: the files left out, or graded
as their folder's learner's.
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure
from rich import box
from rich.table import Table
from rich.text import Text

from fleetlab.core.files import write_atomically
from fleetlab.core.rendering import notebook_html
from fleetlab.course.grading import registry
from fleetlab_instructor.checks import side_of
from fleetlab_instructor.grade.grade import CaseReport, GradeRow
from fleetlab_instructor.grade.submissions import Submission
from fleetlab_instructor.report.feedback import misconception, public_cases_pass
from fleetlab_instructor.report.gradebook import Gradebook

TOP = 3
"""Misconceptions shown per check: the room's most common ones."""
NOT_ATTEMPTED = "not attempted: no answer to it reached the grader"
DID_NOT_RUN = "the notebook did not run to the end (see the feedback file)"
_FIRST_SENTENCE = re.compile(r"^(.+?[.;:])(\s|$)")


@dataclass(frozen=True)
class CheckInRoom:
    """One check across the room: who handed in its lab, who earned every point, what the rest got wrong."""

    check_id: str
    title: str
    learners: int
    passed: int
    misconceptions: tuple[tuple[str, int], ...]  # (what, how many learners), most common first, ties by name

    @property
    def share_passed(self) -> float:
        return self.passed / self.learners if self.learners else 0.0


def room_summary(book: Gradebook, submissions: Sequence[Submission], rows: Sequence[GradeRow],
                 *, top: int = TOP) -> list[CheckInRoom]:
    """Every check of ``book``, in its order, summed over the learners who handed in its lab."""
    seen: dict[str, Counter[str]] = {check_id: Counter() for check_id in book.maxima}
    for sub, row in zip(submissions, rows, strict=True):
        for check_id in book.maxima:
            if check_id.split(".", 1)[0] == sub.lab:
                seen[check_id].update(set(_what_went_wrong(check_id, row)))
    summary = []
    for check_id, most in book.maxima.items():
        scores = [scores[check_id] for scores in book.rows.values() if scores.get(check_id) is not None]
        passed = sum(1 for score in scores if score == most)
        summary.append(CheckInRoom(check_id, registry.get_check(check_id).title, len(scores), passed,
                                   tuple(sorted(seen[check_id].items(), key=lambda seen: (-seen[1], seen[0]))[:top])))
    return summary


def _what_went_wrong(check_id: str, row: GradeRow) -> list[str]:
    report = row.checks.get(check_id)
    if report is None:
        return [DID_NOT_RUN if row.error else NOT_ATTEMPTED]
    public_passed = public_cases_pass(report.cases)
    return [_misconception_of(check_id, case, public_passed) for case in report.cases if case.status == "fail"]


def _misconception_of(check_id: str, case: CaseReport, public_passed: bool) -> str:
    if case.hidden:
        return misconception(check_id, case, public_passed=public_passed)
    if label := side_of(check_id).label_of(case.mistake):
        return label
    match = _FIRST_SENTENCE.match(case.diagnosis)
    return match[1].rstrip(":;") if match else case.diagnosis


def room_figure(summary: Sequence[CheckInRoom], *, title: str) -> Figure:
    """A horizontal bar per check: the share of its learners who earned every point."""
    figure = Figure(figsize=(8, 0.5 * len(summary) + 1.5))
    axes = figure.subplots()
    labels = [f"{check.check_id}  ({check.passed}/{check.learners})" for check in summary]
    shares = [100 * check.share_passed for check in summary]
    axes.barh(labels, shares, color="#2e7d32")
    axes.invert_yaxis()  # the first check on top, as the list below reads
    axes.set_xlim(0, 100)
    axes.set_xlabel("learners who earned every point (%)")
    axes.set_ylabel("check (learners who passed / handed in)")
    axes.set_title(title)
    figure.tight_layout()
    return figure


def room_table(summary: Sequence[CheckInRoom]) -> Table:
    """One line per check: passed, handed in, share, and the room's most common misconception."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    for column, justify in (("check", "left"), ("passed", "right"), ("of", "right"), ("share", "right"),
                            ("most common misconception", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for check in summary:
        common = f"{check.misconceptions[0][0]} ({check.misconceptions[0][1]})" if check.misconceptions else ""
        table.add_row(Text(check.check_id), str(check.passed), str(check.learners),
                      f"{100 * check.share_passed:.0f} %", Text(common))
    return table


def room_html(summary: Sequence[CheckInRoom], *, title: str = "fleetlab: the room", notes: Sequence[str] = ()) -> str:
    """The whole page: the plot, the table, per check its misconceptions with their counts, and intake's notes."""
    sections = "".join(_check_section(check) for check in summary) + _notes_section(notes)
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
            f"<img id='room-plot' alt='share of learners who passed each check' src='data:image/png;base64,"
            f"{_png(room_figure(summary, title=title))}'>"
            f"{notebook_html(room_table(summary))}{sections}</body></html>")


def write_room_report(summary: Sequence[CheckInRoom], path: Path, *, title: str = "fleetlab: the room",
                      notes: Sequence[str] = ()) -> None:
    """Write ``room_html(summary, title=title, notes=notes)`` to ``path`` atomically."""
    write_atomically(path, room_html(summary, title=title, notes=notes))


def _check_section(check: CheckInRoom) -> str:
    head = (f"<h2>{html.escape(check.check_id)} {html.escape(check.title)}: {check.passed} of {check.learners} "
            f"learners passed</h2>")
    if not check.misconceptions:
        return head + "<p>No misconception in the room.</p>"
    items = "".join(f"<li>{html.escape(what)} <b>({count})</b></li>" for what, count in check.misconceptions)
    return f"{head}<ol class='misconceptions'>{items}</ol>"


def _notes_section(notes: Sequence[str]) -> str:
    if not notes:
        return ""
    items = "".join(f"<li>{html.escape(note)}</li>" for note in notes)
    return f"<h2>Files not graded as found ({len(notes)})</h2><ul class='notes'>{items}</ul>"


def _png(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


_STYLE = ("body{font-family:sans-serif;font-size:20px;max-width:60em;margin:2em auto}"
          "img{max-width:100%}li{margin:.3em 0}")

