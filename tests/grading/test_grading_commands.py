"""The command-line layer: progress, assign, grade, and their exit codes."""

import nbformat
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
