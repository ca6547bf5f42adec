"""Which demonstration cells grading leaves out (``demos.cells_to_skip``), and that a graded notebook's scores
do not change when they are left out."""

import csv
from pathlib import Path

import nbformat
import pytest
from fleetlab_instructor.checks import full_checks
from fleetlab_instructor.handout.demos import DEMO_TAG, cells_to_skip
from fleetlab_instructor.grade.submissions import lab_of
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from fleetlab.cli import main

from .conftest import FIXTURES

LABS = Path(__file__).resolve().parents[2] / "labs"


def demo(source):
    return new_code_cell(source, metadata={"tags": [DEMO_TAG]})


def skipped(*cells, answers=("answer",)):
    nb = new_notebook(cells=[new_markdown_cell("# Lab"), *cells])
    return sorted(cells_to_skip(nb, answers))


def test_a_demo_no_one_reads_is_skipped_and_an_untagged_cell_never_is():
    assert skipped(new_code_cell("plot = 1"), demo("chart = draw()"), new_code_cell("def answer(x):\n    return x")) == [2]


def test_a_demo_defining_a_name_an_answer_reads_runs_and_so_does_the_demo_that_name_needs():
    cells = (demo("base = 10"), demo("def helper(x):\n    return x + base"), demo("noise = 1"),
             new_code_cell("def answer(x):\n    return helper(x)"))
    assert skipped(*cells) == [3]


def test_a_demo_defining_the_answer_itself_runs():
    assert skipped(demo("answer = 42"), demo("shown = 1")) == [2]


def test_a_functions_own_locals_and_a_comprehensions_names_do_not_pull_a_demo_in():
    cells = (demo("rows = run()"), demo("item = 3"),
             new_code_cell("def answer(rows):\n    total = 0\n    return [item for item in rows] + [total]"))
    assert skipped(*cells) == [1, 2]


def test_a_demo_that_changes_a_needed_object_runs():
    cells = (new_code_cell("lab = start()"), demo("lab.model = Fake()"), demo("lab.show()"),
             new_code_cell("def answer():\n    return lab.model"))
    assert skipped(*cells) == [3]


@pytest.mark.parametrize("reader", ["print(globals()['x'])", "eval('x')", "from helpers import *", "vars()",
                                    "def answer(:"])
def test_a_cell_that_reaches_names_dynamically_or_cannot_be_read_keeps_every_demo(reader):
    assert skipped(demo("x = 1"), demo("y = 2"), new_code_cell(reader)) == []


def test_vars_of_an_object_reads_that_object_only():
    assert skipped(demo("config = 1"), demo("other = 2"), new_code_cell("answer = vars(config)")) == [2]


@pytest.mark.parametrize("path", sorted(LABS.glob("solutions/*.ipynb")) + sorted(LABS.glob("*.ipynb")),
                         ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_lab_skips_demos_and_keeps_its_exercises(path):
    nb = nbformat.read(path, as_version=4)
    answers = [check.answer_name for check in full_checks(lab_of(path)) if check.answer_name]
    skip = cells_to_skip(nb, answers)
    assert skip, "no demo of the lab is skipped"
    assert all(DEMO_TAG in nb.cells[index].metadata.get("tags", ()) for index in skip)
    assert not any("check(" in nb.cells[index].source or "### BEGIN SOLUTION" in nb.cells[index].source
                   for index in skip)


def test_an_answer_using_a_name_only_a_demo_defines_grades_full_marks_and_an_unneeded_demo_never_runs(
        fixture_lab, tmp_path):
    nb = nbformat.read(FIXTURES / "submissions" / "01_correct.ipynb", as_version=4)
    setup = nb.cells[1]
    assert setup.source.startswith("import math\n")
    setup.source = setup.source.removeprefix("import math\n")
    nb.cells[2:2] = [demo("import math"), demo("import os\nos._exit(1)  # would kill the kernel, were it run")]
    nbformat.write(nb, submitted := tmp_path / "demos_99_fixture.ipynb")
    out = tmp_path / "grades.csv"
    assert main(["grade", str(submitted), "--out", str(out), "--feedback", str(tmp_path / "feedback")]) == 0
    with out.open(newline="") as file:
        rows = {row["learner"]: row for row in csv.DictReader(file)}
    assert (rows["demos"]["99.dedupe"], rows["demos"]["99.visibility"]) == ("3", "2")  # the kernel never died
