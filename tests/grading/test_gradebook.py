"""The gradebook (one row per learner, the grader's maxima, merge) and the feedback files (no hidden input)."""

import csv
import io
import json
import re
from pathlib import Path

import pytest
from fleetlab_instructor.checks import full_check
from fleetlab_instructor.checks.lab00 import planes
from fleetlab_instructor.report import gradebook
from fleetlab_instructor.report.feedback import FITTED, blank_out, misconception, write_feedback
from fleetlab_instructor.grade.grade import CaseReport, CheckReport, GradeRow
from fleetlab_instructor.grade.submissions import Shard, Submission

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


def book(maxima: dict[str, float], **rows: dict[str, float | None]) -> gradebook.Gradebook:
    return gradebook.Gradebook(maxima, dict(rows))


def test_a_shard_with_no_learner_merges(tmp_path):
    empty = gradebook.build([], [])
    assert gradebook.to_csv(empty) == "learner,total\nPoints Possible,0\n"
    full = gradebook.build([sub("ann", "00")], [GradeRow("a", {"00.planes": 1.0}, {}, "")])
    merged = gradebook.merge({Path("1"): empty, Path("2"): full})
    assert gradebook.to_csv(merged) == gradebook.to_csv(full)


def test_merge_refuses_one_learner_graded_differently_in_two_shards():
    one, two = book({"00.planes": 1}, ann={"00.planes": 1}), book({"00.planes": 1}, ann={"00.planes": 0.5})
    with pytest.raises(InvalidInput, match=r"'ann' has 1 for 00.planes in '1.json' but 0.5 in '2.json'"):
        gradebook.merge({Path("1.json"): one, Path("2.json"): two})


def test_merge_refuses_a_maximum_that_differs_between_shards():
    one, two = book({"00.planes": 1}, ann={"00.planes": 1}), book({"00.planes": 2}, bob={"00.planes": 1})
    with pytest.raises(InvalidInput, match=r"Points Possible: 00.planes is worth 1 in '1.json' but 2 in '2.json'"):
        gradebook.merge({Path("1.json"): one, Path("2.json"): two})


def test_merge_joins_other_learners_and_labs_and_keeps_an_agreeing_duplicate():
    one = book({"00.planes": 1}, ann={"00.planes": 1}, bob={"00.planes": 0})
    two = book({"01.x": 2}, ann={"01.x": 2}, cy={"01.x": 1.5})
    three = book({"00.planes": 1}, bob={"00.planes": 0})
    merged = gradebook.merge({Path("1"): one, Path("2"): two, Path("3"): three})
    assert gradebook.to_csv(merged) == ("learner,00.planes,01.x,total\nPoints Possible,1,2,3\n"
                                        "ann,1,2,3\nbob,0,,0\ncy,,1.5,1.5\n")


@pytest.mark.parametrize("learner", ["=HYPERLINK(\"http://x\")", "+1", "-2+3", "@SUM(A1)", "\tx"])
def test_a_learner_id_a_spreadsheet_would_run_is_written_as_text(learner):
    text = gradebook.to_csv(book({"00.planes": 1}, **{learner: {"00.planes": 1}, "ann": {"00.planes": 1}}))
    cells = [row[0] for row in csv.reader(io.StringIO(text))]
    assert cells == ["learner", "Points Possible", *sorted(["'" + learner, "ann"], key=lambda c: c.lstrip("'"))]


CASES = (CaseReport("one", False, "fail", "'x' is missing"), CaseReport("", True, "pass", ""))


def shard_file(run: str, index: int, count: int, learner: str, points: float = 1.0) -> gradebook.ShardFile:
    graded = [(sub(learner, "00"), GradeRow(f"{learner}_00_lab.ipynb", {"00.planes": points}, {"00.planes": 1.0},
                                            "", {"00.planes": CheckReport("fail", "'x' is missing", CASES)}))]
    return gradebook.ShardFile(run, Shard(index, count), gradebook.build(*zip(*graded, strict=True)), graded,
                               [f"{learner}/Untitled.ipynb: names no lab"])


def test_a_shard_file_is_named_by_its_run_and_i_of_n_and_reads_back_whole(tmp_path):
    part = shard_file("day1", 2, 3, "ann", 0.5)
    path = gradebook.write_shard(part, tmp_path)
    assert path == tmp_path / "day1.shard-2-of-3.json" and path.stat().st_mode & 0o077 == 0  # the grader's alone
    assert gradebook.read_shard(path) == part


@pytest.mark.parametrize(("change", "says"), [
    ({"kind": "gradebook"}, "kind is 'gradebook'"),
    ({"run": "../x"}, "is '../x', not a run id"),
    ({"shard": 4}, "I must be from 1 to 3"),
    ({"graded": [{"learner": "ann"}]}, "KeyError"),
])
def test_read_refuses_what_is_not_a_shard_file(tmp_path, change, says):
    path = gradebook.write_shard(shard_file("day1", 2, 3, "ann"), tmp_path)
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    with pytest.raises(InvalidInput, match=re.escape(says)) as raised:
        gradebook.read_shard(path)
    assert raised.value.field == "SHARD" and "is not a fleetlab shard file" in str(raised.value)


def test_merge_shards_needs_exactly_shards_1_to_n_of_one_run():
    parts = {Path(f"{i}.json"): shard_file("day1", i, 4, learner) for i, learner in ((1, "ann"), (3, "cy"))}
    with pytest.raises(InvalidInput, match=r"run 'day1' lacks shards 2/4 \(day1.shard-2-of-4.json\), "
                                           r"4/4 \(day1.shard-4-of-4.json\): 2 of 4 given"):
        gradebook.merge_shards(parts)
    with pytest.raises(InvalidInput, match=r"'x.json' is shard 2/4 of run 'day2' but '1.json' is shard 1/4 of run "):
        gradebook.merge_shards({**parts, Path("x.json"): shard_file("day2", 2, 4, "bob")})
    with pytest.raises(InvalidInput, match=r"'x.json' is shard 2/3 of run 'day1'"):
        gradebook.merge_shards({**parts, Path("x.json"): shard_file("day1", 2, 3, "bob")})
    with pytest.raises(InvalidInput, match=r"shard 3/4 of run 'day1' is given twice: '3.json' and 'x.json'"):
        gradebook.merge_shards({**parts, Path("x.json"): shard_file("day1", 3, 4, "zed")})
    whole = gradebook.merge_shards({**parts, **{Path(f"{i}.json"): shard_file("day1", i, 4, f"l{i}") for i in (2, 4)}})
    assert (whole.run, whole.shard) == ("day1", Shard(1, 1))
    assert sorted(whole.book.rows) == ["ann", "cy", "l2", "l4"]
    assert [s.learner for s, _ in whole.graded] == ["ann", "l2", "cy", "l4"]  # in shard order
    assert whole.notes == sorted(f"{name}/Untitled.ipynb: names no lab" for name in ("ann", "cy", "l2", "l4"))


def test_the_merge_command_names_a_missing_shard_and_writes_nothing(tmp_path, capsys):
    one = gradebook.write_shard(shard_file("day1", 1, 2, "ann"), tmp_path)
    out = tmp_path / "grades.csv"
    assert main(["gradebook", "merge", str(one), "--out", str(out)]) == 2
    assert "fleetlab gradebook: SHARD: run 'day1' lacks shard 2/2 (day1.shard-2-of-2.json)" in capsys.readouterr().err
    assert not out.exists()
    csv_file = tmp_path / "grades-1.csv"
    csv_file.write_text("learner,00.planes,total\nPoints Possible,1,1\nmallory,1,1\n")  # a gradebook is no shard
    assert main(["gradebook", "merge", str(one), str(csv_file), "--out", str(out)]) == 2
    assert "is not a fleetlab shard file" in capsys.readouterr().err and not out.exists()
    two = gradebook.write_shard(shard_file("day1", 2, 2, "bob", 0.5), tmp_path)
    assert main(["gradebook", "merge", str(one), str(two), "--out", str(out)]) == 0
    assert out.read_text() == "learner,00.planes,total\nPoints Possible,1,1\nann,1,1\nbob,0.5,0.5\n"
    assert "merged run 'day1', 2 shards: 2 learners, 1 checks" in capsys.readouterr().out


def test_the_journal_keeps_a_row_for_its_path_learner_lab_and_sha256_only(tmp_path):
    from fleetlab_instructor.grade.journal import Journal, journal_of

    ann, row = sub("ann", "00"), GradeRow("ann_00_lab.ipynb", {"00.planes": 0.5}, {"00.planes": 1.0}, "cell 2 raised",
                                          {"00.planes": CheckReport("fail", "", CASES)})
    journal = Journal(journal_of(tmp_path / "grades.csv"))
    assert journal.folder == tmp_path / "grades.csv.journal" and journal.finished(ann, "abc") is None
    journal.record(ann, "abc", row)
    assert journal.folder.stat().st_mode & 0o077 == 0  # the grader's alone
    assert Journal(journal.folder).finished(ann, "abc") == row
    assert journal.finished(ann, "abd") is None  # the notebook changed since
    assert journal.finished(Submission(ann.path, "bob", "00"), "abc") is None
    [entry] = journal.folder.iterdir()
    entry.write_text("{")  # not one this grader wrote: grade again
    assert journal.finished(ann, "abc") is None
    journal.record(ann, "abc", row)
    assert Journal(journal.folder, restart=True).finished(ann, "abc") is None


def hidden_fail(diagnosis: str, mistake: str = "") -> CaseReport:
    return CaseReport("", True, "fail", diagnosis, mistake)


def test_a_failed_hidden_case_says_its_misconception_never_its_input():
    def said(diagnosis: str, mistake: str = "") -> str:
        return misconception("00.planes", hidden_fail(diagnosis, mistake), public_passed=True)

    assert said("'claim-check bucket' is missing", "claim-check-bucket-missing") == "a hidden component missing"
    assert said("'rules' is missing", "rules-missing") == "only the public four"
    assert said("'workers' belongs to the work plane, not control", "workers-in-the-control-plane") == \
        "… in the control plane"
    assert said("'work queues' is missing", "work-queues-missing") == FITTED  # no catalogue entry has the key
    assert said("'rules' is missing") == FITTED  # the words alone name nothing: only a key does
    timed_out = "timed out after 4 s: your code was still running; look for a loop that never ends"
    assert said(timed_out) == timed_out


def test_blank_out_replaces_whole_values_only():
    assert blank_out("p95 of 25000 s, not 250001; rules and overrules", {"25000", "rules"}) == \
        "p95 of … s, not 250001; … and overrules"


def test_feedback_shows_public_diagnoses_and_keeps_hidden_cases_hidden(tmp_path):
    public = [CaseReport(case.name, False, "pass", "") for case in planes.PUBLIC]
    public[1] = CaseReport(planes.PUBLIC[1].name, False, "fail", "'state machine' belongs to the control plane")
    hidden = [CaseReport("", True, "pass", "") for _ in planes.HIDDEN]
    hidden[3] = hidden_fail("'claim-check bucket' is missing", "claim-check-bucket-missing")
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
    from fleetlab_instructor.report.feedback import hidden_only_values

    shown = 0
    for lab in registry.shipped_labs():
        for check in registry.checks_of(lab):
            values = [value for value in hidden_only_values(check.id) if not value.replace(".", "").isdigit()]
            for wrong in side_of(check.id).wrong_answers:
                said = misconception(check.id, hidden_fail(wrong.expect, wrong.mistake), public_passed=True)
                shown += said != FITTED
                for value in values:
                    assert not re.search(rf"(?<![\w.]){re.escape(value)}(?!\w)", said, re.IGNORECASE), (check.id, said)
    assert shown >= 20


def test_a_hidden_case_the_machine_was_too_busy_to_judge_asks_for_a_regrade_never_blames_the_answer():
    from fleetlab_instructor.report.feedback import MACHINE_TOO_BUSY, feedback_text

    from fleetlab.course.grading.runner import TOO_BUSY

    busy = CaseReport("", True, "error", f"{TOO_BUSY}: in 200 s it gave your code 3.1 s of the 20 s the check allows")
    report = CheckReport("fail", "", (CaseReport("one", False, "pass", ""), busy))
    row = GradeRow("ann_00_orientation.ipynb", {"00.planes": 0.5}, {}, "", {"00.planes": report})
    said = feedback_text("ann", [(Submission(Path(row.notebook), "ann", "00"), row)], {"00.planes": 1.0})
    assert f"- hidden case 1: error ({MACHINE_TOO_BUSY})" in said and "fleetlab bug" not in said


def test_a_learner_id_never_writes_feedback_outside_its_folder(tmp_path):
    folder = tmp_path / "feedback"
    learners = ["../escaped", "/etc/cron.d/x", "..", "h.o@example.org"]
    subs = [sub(learner, "00") for learner in learners]
    rows = [GradeRow("n", {}, {}, "") for _ in learners]
    written = write_feedback(gradebook.build(subs, rows), subs, rows, folder)
    assert sorted(path.name for path in folder.iterdir()) == sorted(path.name for path in written) == [
        "%2E.%2Fescaped.md", "%2E..md", "%2Fetc%2Fcron.d%2Fx.md", "h.o@example.org.md"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["feedback"]
    assert "# Feedback for ../escaped" in (folder / "%2E.%2Fescaped.md").read_text()


def test_the_summary_table_shows_a_learners_text_as_text():
    from rich.console import Console

    rows = [GradeRow("room/ann_00_[red]x.ipynb", {"00.planes": 1.0}, {}, "cell 3 raised KeyError: '[/y]'")]
    console = Console(record=True, width=200)
    console.print(gradebook.summary_table(rows, {"00.planes": 1.0}))
    shown = console.export_text()
    assert "ann_00_[red]x.ipynb" in shown and "KeyError: '[/y]'" in shown


def test_feedback_writes_points_as_people_write_them(tmp_path):
    rows = [GradeRow("n", {"00.planes": 2 / 3}, {"00.planes": 1}, "", {})]
    subs = [sub("ann", "00")]
    [path] = write_feedback(gradebook.build(subs, rows), subs, rows, tmp_path)
    assert "### 00.planes (Name the three planes): 0.67/1 points" in path.read_text()


def test_a_cases_mistake_key_survives_the_journal_and_a_shard_file():
    from fleetlab_instructor.report.gradebook import row_from_json, row_json

    report = CheckReport("fail", "", (hidden_fail("'rules' is missing", "rules-missing"),
                                      CaseReport("event bus", False, "pass", "")))
    row = GradeRow("n", {"00.planes": 0.5}, {"00.planes": 1.0}, "", {"00.planes": report})
    again = row_from_json(json.loads(json.dumps(row_json(row))))
    assert again == row and again.checks["00.planes"].cases[0].mistake == "rules-missing"
