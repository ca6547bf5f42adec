"""The room report: per check, who passed and the misconceptions the room shares, never a hidden input."""

from __future__ import annotations

from pathlib import Path

import pytest
from fleetlab_instructor.report import gradebook, room
from fleetlab_instructor.grade.grade import CaseReport, CheckReport, GradeRow
from fleetlab_instructor.grade.submissions import Submission


def graded(learner: str, scores: dict[str, float], checks: dict[str, CheckReport], error: str = "") -> tuple:
    return Submission(Path(f"{learner}_99_fixture.ipynb"), learner, "99"), GradeRow(
        f"{learner}_99_fixture.ipynb", scores, {}, error, checks)


PASSING = CheckReport("pass", "", (CaseReport("one", False, "pass", ""),))
HIDDEN_SLIP = CaseReport("", True, "fail", "a second publish of the same alert filed ticket 2", "keyed-on-the-delivery")
OWN_WORDS = CaseReport("redelivered", False, "fail", "the effect ran twice for alert-7. Key it on the alert.")


@pytest.fixture
def room_of_four(fixture_lab):
    rooms = [
        graded("alice", {"99.dedupe": 3, "99.visibility": 2}, {"99.dedupe": PASSING, "99.visibility": PASSING}),
        graded("bob", {"99.dedupe": 2, "99.visibility": 2},
               {"99.dedupe": CheckReport("fail", "", (HIDDEN_SLIP,)), "99.visibility": PASSING}),
        graded("carol", {}, {}, error="the kernel died in cell 6"),
        graded("dan", {"99.dedupe": 0, "99.visibility": 2},
               {"99.dedupe": CheckReport("fail", "", (OWN_WORDS, OWN_WORDS)), "99.visibility": PASSING}),
    ]
    submissions, rows = zip(*rooms, strict=True)
    book = gradebook.build(submissions, rows)
    return room.room_summary(book, submissions, rows)


def test_each_check_counts_who_passed_among_those_who_handed_in_its_lab(room_of_four):
    counts = {check.check_id: (check.passed, check.learners) for check in room_of_four}
    assert counts == {"99.dedupe": (1, 4), "99.visibility": (3, 4)}


def test_misconceptions_are_named_by_the_catalogue_or_the_diagnosis_first_sentence_once_per_learner(room_of_four):
    dedupe = {check.check_id: check for check in room_of_four}["99.dedupe"]
    assert sorted(dedupe.misconceptions) == sorted([
        ("keyed on the message id", 1),  # a hidden case: the catalogue entry, never its input
        (room.DID_NOT_RUN, 1),
        ("the effect ran twice for alert-7.", 1),  # two failed public cases, one learner
    ])


def test_the_page_holds_the_plot_the_table_and_each_checks_misconceptions(room_of_four, tmp_path):
    path = tmp_path / "room.html"
    room.write_room_report(room_of_four, path, title="workshop 12")
    page = path.read_text()
    assert page.count("<img id='room-plot'") == 1 and "data:image/png;base64," in page
    assert "99.dedupe" in page and "1 of 4 learners passed" in page and "3 of 4 learners passed" in page
    assert "keyed on the message id <b>(1)</b>" in page
    assert "ticket 2" not in page  # a hidden case's diagnosis is never shown whole


def test_the_figure_is_titled_and_labelled(room_of_four):
    axes = room.room_figure(room_of_four, title="workshop 12").axes[0]
    assert axes.get_title() == "workshop 12"
    assert "%" in axes.get_xlabel() and axes.get_ylabel()
    assert [label.get_text() for label in axes.get_yticklabels()] == ["99.dedupe  (1/4)", "99.visibility  (3/4)"]


def test_the_page_lists_the_files_not_graded_as_found_escaped(room_of_four):
    notes = ["room/grace/Untitled.ipynb: names no lab: not graded", "room/<b>x</b>_01_a.ipynb: a symbolic link"]
    page = room.room_html(room_of_four, notes=notes)
    assert "<h2>Files not graded as found (2)</h2>" in page
    assert "<li>room/grace/Untitled.ipynb: names no lab: not graded</li>" in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page
    assert "not graded as found" not in room.room_html(room_of_four).lower()
