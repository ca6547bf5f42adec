"""The gradebook (one row per learner, the grader's maxima, merge) and the feedback files (no hidden input)."""

import csv
import re
from pathlib import Path

import pytest
from fleetlab_instructor.checks import full_check
from fleetlab_instructor.checks.lab00 import planes
from fleetlab_instructor.grading import gradebook
from fleetlab_instructor.grading.feedback import FITTED, blank_out, misconception, write_feedback
from fleetlab_instructor.grading.grade import CaseReport, CheckReport, GradeRow
from fleetlab_instructor.grading.submissions import Submission

from fleetlab.cli import main
from fleetlab.core.errors import InvalidInput
from fleetlab.course.grading import registry


def sub(learner: str, lab: str) -> Submission:
    return Submission(Path(f"{learner}_{lab}_lab.ipynb"), learner, lab)


def test_one_row_per_learner_blank_where_no_notebook_of_that_lab(tmp_path):
    subs = [sub("bob", "00"), sub("ann", "00"), sub("ann", "02")]
    rows = [GradeRow("b", {"00.planes": 0.5}, {"00.planes": 1}, ""),
            GradeRow("a", {"00.planes": 1.0}, {"00.planes": 1}, ""),
            GradeRow("a2", {"02.window": 2.0}, {"02.window": None}, "cell 3 raised KeyError: 'id'")]
    path = tmp_path / "grades.csv"
    gradebook.write_csv(gradebook.build(subs, rows), path)
    lab02 = {check.id: check.points for check in registry.checks_of("02")}
    header, maxima, ann, bob = list(csv.reader(path.open(newline="")))
    assert header == ["learner", "00.planes", *sorted(lab02), "total"]
    assert maxima == ["Points Possible", "1", *(f"{lab02[c]:g}" for c in sorted(lab02)), f"{1 + sum(lab02.values()):g}"]
    assert ann == ["ann", "1", *("2" if c == "02.window" else "0" for c in sorted(lab02)), "3"]
    assert bob == ["bob", "0.5", *([""] * len(lab02)), "0.5"]


def test_maxima_and_columns_come_from_the_grader_never_from_the_notebook():
    forged = GradeRow("nb", {"00.planes": 1000.0, "99.made-up": 5.0}, {"00.planes": 1000.0, "99.made-up": 5}, "")
    book = gradebook.build([sub("mal", "00")], [forged])
    assert book.maxima == {"00.planes": registry.get_check("00.planes").points} == {"00.planes": 1.0}
    assert book.rows == {"mal": {"00.planes": 1.0}}


def test_a_shard_with_no_learner_writes_a_gradebook_that_merges(tmp_path):
    empty, full = tmp_path / "empty.csv", tmp_path / "full.csv"
    gradebook.write_csv(gradebook.build([], []), empty)
    assert empty.read_text() == "learner,total\nPoints Possible,0\n"
    gradebook.write_csv(gradebook.build([sub("ann", "00")], [GradeRow("a", {"00.planes": 1.0}, {}, "")]), full)
    merged = gradebook.merge({empty: gradebook.read_csv(empty), full: gradebook.read_csv(full)})
    assert gradebook.to_csv(merged) == full.read_text()


def written(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_merge_refuses_one_learner_graded_differently_in_two_shards(tmp_path, capsys):
    one = written(tmp_path, "1.csv", "learner,00.planes,total\nPoints Possible,1,1\nann,1,1\n")
    two = written(tmp_path, "2.csv", "learner,00.planes,total\nPoints Possible,1,1\nann,0.5,0.5\n")
    with pytest.raises(InvalidInput, match=r"'ann' has 1 for 00.planes in '.*1.csv' but 0.5 in '.*2.csv'"):
        gradebook.merge({one: gradebook.read_csv(one), two: gradebook.read_csv(two)})
    assert main(["gradebook", "merge", str(one), str(two), "--out", str(tmp_path / "all.csv")]) == 2
    assert "fleetlab gradebook: learner: 'ann' has 1 for 00.planes" in capsys.readouterr().err
    assert not (tmp_path / "all.csv").exists()


def test_merge_refuses_a_maximum_that_differs_between_shards(tmp_path):
    one = written(tmp_path, "1.csv", "learner,00.planes,total\nPoints Possible,1,1\nann,1,1\n")
    two = written(tmp_path, "2.csv", "learner,00.planes,total\nPoints Possible,2,2\nbob,1,1\n")
    with pytest.raises(InvalidInput, match=r"Points Possible: 00.planes is worth 1 in '.*1.csv' but 2 in '.*2.csv'"):
        gradebook.merge({one: gradebook.read_csv(one), two: gradebook.read_csv(two)})


def test_merge_joins_other_learners_and_labs_and_keeps_an_agreeing_duplicate(tmp_path):
    one = written(tmp_path, "1.csv", "learner,00.planes,total\nPoints Possible,1,1\nann,1,1\nbob,0,0\n")
    two = written(tmp_path, "2.csv", "learner,01.x,total\nPoints Possible,2,2\nann,2,2\ncy,1.5,1.5\n")
    three = written(tmp_path, "3.csv", "learner,00.planes,total\nPoints Possible,1,1\nbob,0,0\n")
    merged = gradebook.merge({path: gradebook.read_csv(path) for path in (one, two, three)})
    assert gradebook.to_csv(merged) == ("learner,00.planes,01.x,total\nPoints Possible,1,2,3\n"
                                        "ann,1,2,3\nbob,0,,0\ncy,,1.5,1.5\n")


@pytest.mark.parametrize(("text", "says"), [
    ("notebook,00.planes,total,error\nx.ipynb,1,1,\n", "is not a fleetlab gradebook"),
    ("learner,00.planes,total\nann,1,1\n", "is not a fleetlab gradebook"),
    ("learner,00.planes,total\nPoints Possible,1,1\nann,one,1\n", "row 3 of .* holds 'one', not a number"),
    ("learner,00.planes,total\nPoints Possible,1,1\nann,1\n", "row 3 of .* has 2 cells, not 3"),
    ("learner,00.planes,total\nPoints Possible,1,1\nann,1,1\nann,0,0\n", "two rows for learner 'ann'"),
])
def test_read_refuses_what_is_not_a_gradebook(tmp_path, text, says):
    with pytest.raises(InvalidInput, match=says):
        gradebook.read_csv(written(tmp_path, "g.csv", text))


def test_a_failed_hidden_case_says_its_misconception_never_its_input():
    assert misconception("00.planes", "'claim-check bucket' is missing") == "a hidden component missing"
    assert misconception("00.planes", "'rules' is missing") == "only the public four"
    assert misconception("00.planes", "'workers' belongs to the work plane, not control") == "… in the control plane"
    assert misconception("00.planes", "'work queues' is missing") == FITTED  # no catalogue entry says so
    timed_out = "timed out after 4 s: your code was still running; look for a loop that never ends"
    assert misconception("00.planes", timed_out) == timed_out


def test_blank_out_replaces_whole_values_only():
    assert blank_out("p95 of 25000 s, not 250001; rules and overrules", {"25000", "rules"}) == \
        "p95 of … s, not 250001; … and overrules"


def test_feedback_shows_public_diagnoses_and_keeps_hidden_cases_hidden(tmp_path):
    public = [CaseReport(case.name, False, "pass", "") for case in planes.PUBLIC]
    public[1] = CaseReport(planes.PUBLIC[1].name, False, "fail", "'state machine' belongs to the control plane")
    hidden = [CaseReport("", True, "pass", "") for _ in planes.HIDDEN]
    hidden[3] = CaseReport("", True, "fail", "'claim-check bucket' is missing")
    hidden[2] = CaseReport("", True, "skipped", "not run: the check ran out of time")
    report = CheckReport("fail", "'state machine' belongs to the control plane (2 of 8 cases fail)",
                         (*public, *hidden))
    rows = [GradeRow("n", {"00.planes": 0.625}, {"00.planes": 1}, "", {"00.planes": report})]
    subs = [sub("ann", "00")]
    [path] = write_feedback(gradebook.build(subs, rows), subs, rows, tmp_path)
    text = path.read_text()
    assert path.name == "ann.md" and "### 00.planes (Name the three planes): 0.625/1 points" in text
    assert f"- public case *{planes.PUBLIC[1].name}*: fail: 'state machine' belongs to the control plane" in text
    assert "- hidden case 3: skipped (not run: the check ran out of time on an earlier case)" in text
    assert "- hidden case 4: fail; it points to: a hidden component missing" in text
    for case in full_check("00.planes").hidden:
        assert case.name not in text and case.why not in text


def test_feedback_says_a_check_not_graded_and_a_problem_while_grading(tmp_path):
    rows = [GradeRow("n", {}, {}, "the kernel died in cell 6")]
    subs = [sub("bob", "00")]
    [path] = write_feedback(gradebook.build(subs, rows), subs, rows, tmp_path)
    text = path.read_text()
    assert "Problems while grading: the kernel died in cell 6" in text
    assert "### 00.planes (Name the three planes): 0/1 points\n\nnot graded: no answer to it reached the grader" in text


def test_no_catalogue_name_shown_for_a_hidden_case_quotes_a_hidden_only_value():
    from fleetlab_instructor.checks import side_of
    from fleetlab_instructor.grading.feedback import hidden_only_values

    shown = 0
    for lab in registry.shipped_labs():
        for check in registry.checks_of(lab):
            values = [value for value in hidden_only_values(check.id) if not value.replace(".", "").isdigit()]
            for wrong in side_of(check.id).wrong_answers:
                said = misconception(check.id, wrong.expect)
                shown += said != FITTED
                for value in values:
                    assert not re.search(rf"(?<![\w.]){re.escape(value)}(?!\w)", said, re.IGNORECASE), (check.id, said)
    assert shown >= 20


def test_a_hidden_case_the_machine_was_too_busy_to_judge_asks_for_a_regrade_never_blames_the_answer():
    from fleetlab_instructor.grading.feedback import MACHINE_TOO_BUSY, feedback_text

    from fleetlab.course.grading.runner import TOO_BUSY

    busy = CaseReport("", True, "error", f"{TOO_BUSY}: in 200 s it gave your code 3.1 s of the 20 s the check allows")
    report = CheckReport("fail", "", (CaseReport("one", False, "pass", ""), busy))
    row = GradeRow("ann_00_orientation.ipynb", {"00.planes": 0.5}, {}, "", {"00.planes": report})
    said = feedback_text("ann", [(Submission(Path(row.notebook), "ann", "00"), row)], {"00.planes": 1.0})
    assert f"- hidden case 1: error ({MACHINE_TOO_BUSY})" in said and "fleetlab bug" not in said
