"""The command-line layer: progress, assign, grade, and their exit codes."""

import re

import nbformat
import pytest
from fleetlab_instructor.checks.lab00 import planes as lab00
from nbformat.v4 import new_code_cell, new_notebook

from fleetlab.cli import main
from fleetlab.course.grading import check


def test_progress_shows_each_lab_and_its_checks(capsys, fleetlab_home):
    check("00.planes", dict(lab00.REFERENCE))
    capsys.readouterr()
    assert main(["progress", "--lab", "00"]) == 0
    out = capsys.readouterr().out
    assert "00.planes" in out and "pass" in out and str(fleetlab_home) in out.replace("\n", "")


def test_assign_check_names_stale_notebooks_and_fails(tmp_path, capsys):
    solutions, students = tmp_path / "solutions", tmp_path / "labs"
    solutions.mkdir()
    code = "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION"
    nbformat.write(new_notebook(cells=[new_code_cell(code)]), solutions / "01_lab.ipynb")
    assert main(["assign", "--check", "--solutions", str(solutions), "--out", str(students)]) == 1
    assert f"stale: {students / '01_lab.ipynb'}" in capsys.readouterr().err
    assert main(["assign", "--solutions", str(solutions), "--out", str(students)]) == 0
    assert main(["assign", "--check", "--solutions", str(solutions), "--out", str(students)]) == 0


def test_a_usage_problem_is_one_line_and_exit_status_2(tmp_path, capsys):
    assert main(["grade", str(tmp_path / "missing.txt")]) == 2
    assert "neither a notebook nor a folder" in capsys.readouterr().err
    assert main(["assign", "--solutions", str(tmp_path / "nowhere")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_grading_unsandboxed_warns_that_the_notebooks_must_be_trusted(tmp_path, capsys):
    for flags, warned in ((["--unsandboxed"], True), ([], False)):
        assert main(["grade", *flags, str(tmp_path / "missing.txt")]) == 2
        assert ("warning: grading unsandboxed" in capsys.readouterr().err) is warned


class Killed(BaseException):
    """The grader's process ending part-way (nothing catches it)."""


def test_a_grader_killed_part_way_resumes_from_its_journal(tmp_path, capsys, monkeypatch):
    from fleetlab_instructor.grade.journal import Journal

    room, out = tmp_path / "room", tmp_path / "grades.csv"
    room.mkdir()
    for learner, answer in (("ann", repr(dict(lab00.REFERENCE))), ("bob", "...")):
        nb = new_notebook(cells=[new_code_cell(f"planes = {answer}")])
        nbformat.write(nb, room / f"{learner}_00_orientation.ipynb")
    record = Journal.record

    def killed_after_its_first_row(journal, sub, sha256, row):
        record(journal, sub, sha256, row)
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(Journal, "record", killed_after_its_first_row)
        with pytest.raises(Killed):
            main(["grade", str(room), "--out", str(out)])
    assert not out.exists() and len(list((tmp_path / "grades.csv.journal").iterdir())) == 1
    capsys.readouterr()

    def graded() -> tuple[str, list[str], str]:
        assert main(["grade", str(room), "--out", str(out)]) == 0
        printed = capsys.readouterr().out
        kept = re.findall(r"kept: \S+/(\w+)_00_orientation.ipynb: graded before and unchanged since \(same sha256\)",
                          printed)
        assert "(--restart grades it again)" in printed if kept else "kept:" not in printed
        return out.read_text(), kept, printed

    book, kept, printed = graded()
    assert ", kept 1 from the journal" in printed and "graded 1 notebooks" in printed
    assert len(kept) == 1 and book == "learner,00.planes,total\nPoints Possible,1,1\nann,1,1\nbob,0,0\n"
    nbformat.write(new_notebook(cells=[new_code_cell(f"planes = {dict(lab00.REFERENCE)!r}")]),
                   room / "bob_00_orientation.ipynb")  # bob hands in again: his notebook is graded again
    book, kept, _ = graded()
    assert kept == ["ann"] and book.endswith("ann,1,1\nbob,1,1\n")
    assert main(["grade", str(room), "--out", str(out), "--restart"]) == 0
    assert "kept:" not in (printed := capsys.readouterr().out) and "graded 2 notebooks" in printed
    (room / "cy_00_orientation.ipynb").write_bytes(b"\xff")  # a third learner's broken file: never journaled
    monkeypatch.setattr("fleetlab_instructor.grade.batch.grade_notebooks", None)  # nothing left to grade
    book, kept, printed = graded()
    assert sorted(kept) == ["ann", "bob"] and book.endswith("ann,1,1\nbob,1,1\ncy,0,0\n")
    assert "graded 0 notebooks in" in printed and ", kept 2 from the journal" in printed
