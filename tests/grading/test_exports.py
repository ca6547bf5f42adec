"""Exports where grades live (Canvas's gradebook import, Gradescope's results.json and autograder archive) and the
adjustments before them (a regrade, lateness with its penalty, overrides with their reasons)."""

import csv
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from fleetlab_instructor.checks import full_check
from fleetlab_instructor.collect.manifest import Collected, Manifest, read_manifest, write_manifest
from fleetlab_instructor.report import adjust, exports, gradebook
from fleetlab_instructor.grade.grade import CaseReport, CheckReport, GradeRow
from fleetlab_instructor.grade.submissions import Submission

from fleetlab.cli import main
from fleetlab.core.errors import InvalidInput
from fleetlab.course.grading import registry

ROSTER = """\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Lab 01 (4401),Quiz 1 (4402),Lab 03 (4403),Current Score
Points Possible,,,,,4.00,10.00,(read only),(read only)
"Lovelace, Ada",101,u-ada,ada,Tue,,8,,
"=cmd|' /C calc'!A0",102,u-eve,=eve,Tue,,,,
"Hopper, Grace",103,u-grace,h.o@example.org,Wed,,,,
"Student, Test",104,,,Tue,,,,
"""


def sub(learner: str, lab: str) -> Submission:
    return Submission(Path(f"{learner}/{lab}_lab.ipynb"), learner, lab)


def room() -> gradebook.Gradebook:
    """Three learners: ada and h.o@example.org handed in labs 01 and 03, =eve lab 01 only."""
    subs = [sub("ada", "01"), sub("ada", "03"), sub("=eve", "01"), sub("h.o@example.org", "01"),
            sub("h.o@example.org", "03")]
    rows = [GradeRow("a1", {"01.heartbeat": 2.0, "01.visibility": 1.5}, {}, ""),
            GradeRow("a3", {"03.budget": 2.0}, {}, ""),
            GradeRow("e1", {"01.heartbeat": 1.0}, {}, ""),
            GradeRow("h1", {"01.heartbeat": 2.0, "01.visibility": 2.0}, {}, ""),
            GradeRow("h3", {"03.budget": 1.0, "03.triage": 1.0}, {}, "")]
    return gradebook.build(subs, rows)


def canvas_reads(text: str) -> tuple[dict[str, str], dict[str, float], dict[str, dict[str, float | None]]]:
    """The file read as Canvas's gradebook import reads one: UTF-8 CSV (RFC 4180), a header whose first columns
    identify the student and whose other columns are assignments named 'Name (id)' (a column without an id would
    make a new assignment), an optional 'Points Possible' row, then one student a row, found by ID, SIS User ID or
    SIS Login ID; a score a number or blank (left as it was). Returns assignment id -> header, the maxima and
    each student's (by ID) scores by assignment id."""
    text.encode("utf-8")
    rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    header, *rest = rows
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assignments = {}
    for column in header[5:]:
        match = re.fullmatch(r"(.+) \((\d+)\)", column)
        assert match, f"{column!r} would become a new assignment"
        assignments[match[2]] = column
    assert all(len(row) == len(header) for row in rest)
    maxima = {}
    if rest and rest[0][0].strip() == "Points Possible":
        maxima = {aid: float(cell) for aid, cell in zip(assignments, rest.pop(0)[5:], strict=True)}
    students = {}
    for row in rest:
        assert row[1] or row[2] or row[3], f"{row} names no student"
        assert not any(cell[:1] in "=+-@" and cell for cell in row), f"{row} holds a formula"
        students[row[1]] = {aid: None if cell == "" else float(cell)
                            for aid, cell in zip(assignments, row[5:], strict=True)}
    return assignments, maxima, students


def test_canvas_import_updates_the_roster_assignments_by_id_with_a_points_possible_row(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER, encoding="utf-8")
    header, students = exports.read_roster(roster)
    text = exports.canvas_import(room(), header, students)
    assignments, maxima, scores = canvas_reads(text)
    lab01 = sum(check.points for check in registry.checks_of("01"))
    lab03 = sum(check.points for check in registry.checks_of("03"))
    assert assignments == {"4401": "Lab 01 (4401)", "4403": "Lab 03 (4403)"}
    assert maxima == {"4401": lab01, "4403": lab03}
    assert scores == {"101": {"4401": 3.5, "4403": 2.0}, "102": {"4401": 1.0, "4403": None},
                      "103": {"4401": 4.0, "4403": 2.0}}
    assert text.splitlines()[3] == "'=cmd|' /C calc'!A0,102,u-eve,'=eve,Tue,1,"  # matched, and no formula


def test_canvas_import_names_learners_the_roster_lacks_and_labs_it_has_no_column_for(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER.replace("h.o@example.org", "grace"), encoding="utf-8")
    header, students = exports.read_roster(roster)
    with pytest.raises(InvalidInput, match="'h.o@example.org'"):
        exports.canvas_import(room(), header, students)
    roster.write_text(ROSTER.replace("Lab 03 (4403)", "Week 3 (4403)"), encoding="utf-8")
    header, students = exports.read_roster(roster)
    with pytest.raises(InvalidInput, match="lab 03: the roster has no assignment column") as caught:
        exports.canvas_import(room(), header, students)
    assert "--column 03=" in caught.value.hint
    text = exports.canvas_import(room(), header, students, {"03": "Week 3 (4403)"})
    assert text.splitlines()[0].endswith(",Lab 01 (4401),Week 3 (4403)")
    roster.write_text(ROSTER.replace("SIS Login ID", "Login"), encoding="utf-8")
    with pytest.raises(InvalidInput, match="lacks Canvas's column SIS Login ID"):
        exports.read_roster(roster)


def test_fleetlab_gradebook_canvas_writes_the_import(tmp_path, capsys):
    grades, roster, out = tmp_path / "grades.csv", tmp_path / "roster.csv", tmp_path / "canvas.csv"
    gradebook.write_csv(room(), grades)
    roster.write_text(ROSTER, encoding="utf-8")
    assert main(["gradebook", "canvas", str(grades), "--roster", str(roster), "--out", str(out)]) == 0
    assert out.read_text().splitlines()[:2] == ["Student,ID,SIS User ID,SIS Login ID,Section,Lab 01 (4401),"
                                                "Lab 03 (4403)", "Points Possible,,,,,4,10"]


def test_the_gradebook_reads_back_as_written_late_column_included():
    book = room()
    assert gradebook.read_csv_text(gradebook.to_csv(book)) == book
    late, _ = adjust.adjust(book, late={("=eve", "01"): 1.5})
    text = gradebook.to_csv(late)
    assert text.splitlines()[0].endswith(",late,total")
    assert "'=eve,1,0,,,,,01: 1.5 d,1" in text
    assert gradebook.read_csv_text(text) == late


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


DEADLINE = "2026-12-04T17:00:00Z"


def collected(folder: Path, *notebooks: tuple[str, str, str, bool], on_time: str | None = DEADLINE) -> Path:
    """``folder`` with the manifest of a collect after the deadline's (``on_time``): (learner, lab, when, late)."""
    folder.mkdir()
    entries = [Collected(learner, learner, f"{learner}/{lab}_lab.ipynb", lab, when, "final", "0" * 64, late)
               for learner, lab, when, late in notebooks]
    snapshot = None if on_time is None else {"run": "deadline", "collected_at": on_time}
    write_manifest(Manifest("final", "2026-12-05T09:00:00Z", "the test", ["01", "03"], snapshot, entries), folder)
    return folder


def test_late_penalty_takes_a_share_per_day_begun_since_the_deadlines_collect_of_the_late_lab_only(tmp_path):
    lateness = read_manifest(collected(tmp_path / "final", ("ada", "01", "2026-12-05T09:00:00Z", True),
                                       ("ada", "03", "2026-12-05T09:00:01Z", False),
                                       ("h.o@example.org", "03", "2026-12-06T18:00:00Z", True))).lateness()
    assert lateness == {("ada", "01"): 1, ("h.o@example.org", "03"): 3}  # 16 h: 1 day begun; 49 h: 3
    book, _ = adjust.adjust(room(), late=lateness, penalty=0.1)
    assert book.rows["ada"]["01.heartbeat"] == 1.8 and book.rows["ada"]["03.budget"] == 2.0
    assert book.rows["h.o@example.org"]["03.budget"] == 0.7 and book.rows["h.o@example.org"]["01.heartbeat"] == 2.0
    assert book.late == {"ada": {"01": 1}, "h.o@example.org": {"03": 3}}
    unpenalised, _ = adjust.adjust(room(), late=lateness)
    assert unpenalised.rows == room().rows and unpenalised.late == book.late
    same_second = collected(tmp_path / "same", ("ada", "01", DEADLINE, True))
    assert read_manifest(same_second).lateness() == {("ada", "01"): 1}
    with pytest.raises(InvalidInput, match="on_time.*marks notebooks late"):
        read_manifest(collected(tmp_path / "m2", ("ada", "01", DEADLINE, True), on_time=None)).lateness()
    with pytest.raises(InvalidInput, match="collected_at"):
        read_manifest(collected(tmp_path / "m3", ("ada", "01", "5 Dec, 9 am", True))).lateness()
    with pytest.raises(InvalidInput, match="--late-penalty"):
        adjust.adjust(room(), late=lateness, penalty=1.5)


def test_a_regrade_replaces_one_learners_labs_and_an_override_comes_last_with_its_reason(tmp_path):
    regrade = gradebook.build([sub("ada", "03")], [GradeRow("a3", {"03.budget": 1.0, "03.redrive": 2.0}, {}, "")])
    overrides = adjust.read_overrides(write(tmp_path / "overrides.csv", (
        "learner,check,points,reason\nh.o@example.org,03.budget,2,\"dispute 12 Dec: the budget, ambiguous\"\n")))
    book, applied = adjust.adjust(room(), regrades=[regrade], late={("h.o@example.org", "03"): 1}, penalty=0.5,
                                  overrides=overrides)
    assert book.rows["ada"]["03.budget"] == 1.0 and book.rows["ada"]["03.redrive"] == 2.0
    assert book.rows["ada"]["01.heartbeat"] == 2.0 and book.rows["=eve"] == room().rows["=eve"]
    assert book.rows["h.o@example.org"]["03.budget"] == 2.0 and book.rows["h.o@example.org"]["03.triage"] == 0.5
    assert adjust.reasons_csv(applied) == ("learner,check,graded,now,reason\n"
                                           "h.o@example.org,03.budget,0.5,2,\"dispute 12 Dec: the budget, ambiguous\"\n")
    for text, error in (("learner,check,points,reason\nada,03.budget,2,\n", "reason"),
                        ("learner,check,points\nada,03.budget,2\n", "lacks the column reason"),
                        ("learner,check,points,reason\nada,03.budget,two,x\n", "'two' on line 2")):
        with pytest.raises(InvalidInput, match=error):
            adjust.read_overrides(write(tmp_path / "bad.csv", text))
    for override, error in ((adjust.Override("zed", "03.budget", 1, "x"), "'zed'"),
                            (adjust.Override("ada", "99.none", 1, "x"), "'99.none'"),
                            (adjust.Override("ada", "03.budget", 9, "x"), "outside 0 to 2")):
        with pytest.raises(InvalidInput, match=error):
            adjust.adjust(room(), overrides=[override])
    with pytest.raises(InvalidInput, match="'zed' is not in the gradebook"):
        adjust.adjust(room(), regrades=[gradebook.build([sub("zed", "03")], [GradeRow("z", {}, {}, "")])])


def test_fleetlab_gradebook_adjust_writes_the_gradebook_and_the_reasons_beside_it(tmp_path):
    grades = tmp_path / "grades.csv"
    gradebook.write_csv(room(), grades)
    late = collected(tmp_path / "final", ("ada", "03", "2026-12-05T16:59:59Z", True))
    write(tmp_path / "overrides.csv", "learner,check,points,reason\n=eve,01.visibility,2,+ cell 4 was right\n")
    out = tmp_path / "final.csv"
    assert main(["gradebook", "adjust", str(grades), "--collected", str(late), "--late-penalty",
                 "0.25", "--overrides", str(tmp_path / "overrides.csv"), "--out", str(out)]) == 0
    final = gradebook.read_csv(out)
    assert final.rows["ada"]["03.budget"] == 1.5 and final.late == {"ada": {"03": 1.0}}
    assert final.rows["=eve"]["01.visibility"] == 2.0
    assert (tmp_path / "final.reasons.csv").read_text().splitlines()[1] == "'=eve,01.visibility,0,2,'+ cell 4 was right"
    assert main(["gradebook", "adjust", str(grades), "--late-penalty", "0.1", "--out", str(out)]) == 2


def graded_notebook(learner: str) -> tuple[list[tuple[Submission, GradeRow]], gradebook.Gradebook]:
    """A learner's lab 01: 01.heartbeat right but for one hidden case, 01.visibility not attempted."""
    heartbeat = full_check("01.heartbeat")
    cases = (*(CaseReport(case.name, False, "pass", "") for case in heartbeat.public),
             CaseReport("", True, "pass", ""), CaseReport("", True, "fail", "the heartbeat stops after 7 extensions"))
    row = GradeRow(f"{learner}/01_lab.ipynb", {"01.heartbeat": 1.5, "01.visibility": 0.0}, {}, "",
                   {"01.heartbeat": CheckReport("fail", "", cases)})
    subs = [sub(learner, "01")]
    return list(zip(subs, [row], strict=True)), gradebook.build(subs, [row])


def assert_gradescope_results(results: dict) -> None:
    """``results`` holds only what Gradescope's autograder specification describes, of the types it gives."""
    top = {"score": float, "execution_time": (int, float), "output": str, "output_format": str, "visibility": str,
           "stdout_visibility": str, "extra_data": dict, "tests": list, "leaderboard": list}
    per_test = {"score": float, "max_score": float, "status": str, "name": str, "name_format": str, "number": str,
                "output": str, "output_format": str, "tags": list, "visibility": str, "extra_data": dict}
    visibilities = {"hidden", "after_due_date", "after_published", "visible"}
    assert set(results) <= set(top) and all(isinstance(results[k], top[k]) for k in results)
    assert "score" in results or all("score" in test for test in results["tests"])
    for test in results.get("tests", []):
        assert set(test) <= set(per_test) and all(isinstance(test[k], per_test[k]) for k in test), test
        assert test.get("visibility", "visible") in visibilities
        assert test.get("status", "passed") in {"passed", "failed"}
        assert 0 <= test["score"] <= test["max_score"] or test["max_score"] == 0 == test["score"]


def test_gradescope_results_a_test_per_case_hidden_ones_after_the_due_date_and_never_their_inputs():
    graded, book = graded_notebook("ada")
    results = exports.results_json(graded, book)
    assert_gradescope_results(results)
    assert results["score"] == 1.5
    tests = {test["name"]: test for test in results["tests"]}
    hidden = tests["01.heartbeat (" + registry.get_check("01.heartbeat").title + "): hidden case 2"]
    assert hidden["visibility"] == "after_due_date" and hidden["score"] == 0 and hidden["max_score"] == 0.5
    assert hidden["output"].startswith("hidden case 2: fail; it points to: ")
    public = [test for name, test in tests.items() if "public case" in name]
    assert [test["visibility"] for test in public] == ["visible", "visible"]
    assert sum(test["score"] for test in results["tests"]) == results["score"]
    (visibility,) = [test for name, test in tests.items() if name.startswith("01.visibility")]
    assert visibility["score"] == 0 and visibility["max_score"] == 2 and "not graded" in visibility["output"]
    assert exports.results_json(graded, book, hidden_visibility="hidden")["tests"][3]["visibility"] == "hidden"
    for value in (str(case) for case in full_check("01.heartbeat").hidden):
        assert value not in json.dumps(results)
    with pytest.raises(InvalidInput, match="2 learners"):
        exports.results_json(graded + graded_notebook("bob")[0], book)


def test_fleetlab_gradebook_gradescope_reads_a_shard_and_autograder_writes_the_archive(tmp_path):
    graded, book = graded_notebook("learner")
    shard = gradebook.write_shard(gradebook.ShardFile("gradescope", gradebook.Shard(1, 1), book, graded, []), tmp_path)
    out = tmp_path / "results.json"
    assert main(["gradebook", "gradescope", str(shard), "--out", str(out)]) == 0
    assert_gradescope_results(json.loads(out.read_text()))
    archive = tmp_path / "autograder.zip"
    course = Path(__file__).resolve().parents[2]
    assert main(["gradebook", "autograder", str(archive), "--lab", "03", "--course", str(course)]) == 0
    with zipfile.ZipFile(archive) as opened:
        names = opened.namelist()
        run = opened.read("run_autograder").decode()
        modes = {info.filename: info.external_attr >> 16 for info in opened.infolist()}
    assert names[:2] == ["setup.sh", "run_autograder"] and modes["run_autograder"] & 0o111
    assert "course/instructor/pyproject.toml" in names and not any("__pycache__" in name for name in names)
    assert "/fleetlab\" grade submissions --unsandboxed" in run and "the sandbox here" in run
    assert "LAB=03\n" in run and "root=${AUTOGRADER_ROOT:-/autograder}" in run
    assert main(["gradebook", "autograder", str(archive), "--lab", "42", "--course", str(course)]) == 2


def test_fleetlab_gradebook_gradescope_picks_one_learner_of_a_room_and_says_their_late_lab(tmp_path):
    ada, ada_book = graded_notebook("ada")
    bob, bob_book = graded_notebook("bob")
    book = gradebook.Gradebook(ada_book.maxima, {**ada_book.rows, **bob_book.rows})
    shard = gradebook.write_shard(gradebook.ShardFile("final", gradebook.Shard(1, 1), book, ada + bob, []), tmp_path)
    late = collected(tmp_path / "final", ("ada", "01", "2026-12-05T23:00:00Z", True))  # 30 h: 2 days begun
    out = tmp_path / "results.json"
    assert main(["gradebook", "gradescope", str(shard), "--learner", "ada", "--collected", str(late),
                 "--late-penalty", "0.1", "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    assert_gradescope_results(results)
    assert results["score"] == 1.2 and results["output"] == "late: 01: 2 d"
    assert main(["gradebook", "gradescope", str(shard), "--learner", "bob", "--collected", str(late),
                 "--late-penalty", "0.1", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["score"] == 1.5 and "late" not in json.loads(out.read_text())["output"]
    assert main(["gradebook", "gradescope", str(shard), "--out", str(out)]) == 2  # two learners: name one
    assert main(["gradebook", "gradescope", str(shard), "--learner", "zed", "--out", str(out)]) == 2
    assert main(["gradebook", "gradescope", str(shard), "--learner", "ada", "--late-penalty", "0.1",
                 "--out", str(out)]) == 2  # a penalty needs the collect that says who was late


def test_run_autograder_grades_a_submitted_notebook_into_results_json(tmp_path):
    """The archive's run_autograder, in a folder laid out as Gradescope's /autograder with this course's venv,
    grades lab 01's solution notebook (any name) to full points, and a submission without a notebook to 0."""
    course = Path(__file__).resolve().parents[2]
    root = tmp_path / "autograder"
    exports.write_autograder(course, tmp_path / "autograder.zip", lab="01")
    with zipfile.ZipFile(tmp_path / "autograder.zip") as opened:
        opened.extract("run_autograder", root)
    (root / "venv").symlink_to(Path(sys.executable).parent.parent)
    (root / "submission").mkdir()
    env = {**os.environ, "AUTOGRADER_ROOT": str(root)}
    subprocess.run(["bash", str(root / "run_autograder")], env=env, check=True, capture_output=True, timeout=300)
    assert json.loads((root / "results" / "results.json").read_text())["score"] == 0
    (root / "submission" / "my lab.ipynb").write_bytes((course / "labs/solutions/01_at_least_once.ipynb").read_bytes())
    done = subprocess.run(["bash", str(root / "run_autograder")], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert_gradescope_results(results)
    assert results["score"] == sum(check.points for check in registry.checks_of("01")) == 4
    assert {test["visibility"] for test in results["tests"] if "hidden case" in test["name"]} == {"after_due_date"}
