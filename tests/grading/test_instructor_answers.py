"""An answer taken from the instructor's package scores nothing, in the notebook and in the grader."""

from __future__ import annotations

import csv
from pathlib import Path

import nbformat
from fleetlab_instructor.checks.lab00 import planes
from nbformat.v4 import new_code_cell, new_notebook

from fleetlab.cli import main
from fleetlab.course.grading import check
from fleetlab.course.grading.results import CheckStatus

OWN_ANSWER = {
    "event bus": "control", "rules": "control", "state machine": "control", "work queues": "work",
    "dead-letter queues": "work", "workers": "work", "idempotency table": "state", "claim-check bucket": "state",
}


def submission(path: Path, *cells: str) -> Path:
    nbformat.write(new_notebook(cells=[new_code_cell(source) for source in cells]), path)
    return path


def graded(tmp_path: Path, *notebooks: Path) -> tuple[dict[str, dict[str, str]], Path]:
    """The gradebook's rows by learner, and the folder of feedback files."""
    out, feedback = tmp_path / "grades.csv", tmp_path / "feedback"
    assert main(["grade", *map(str, notebooks), "--out", str(out), "--feedback", str(feedback)]) == 0
    with out.open(newline="") as file:
        return {row["learner"]: row for row in csv.DictReader(file)}, feedback


def test_a_notebook_that_imports_a_reference_answer_finds_no_instructors_package_and_scores_nothing(tmp_path):
    borrowed = submission(tmp_path / "borrowed_00_orientation.ipynb", "from fleetlab import check",
                          "from fleetlab_instructor.checks.lab00.planes import REFERENCE\nanswer = REFERENCE",
                          'check("00.planes", answer)')
    own = submission(tmp_path / "own_00_orientation.ipynb", "from fleetlab import check", f"answer = {OWN_ANSWER!r}",
                     'check("00.planes", answer)')
    rows, feedback = graded(tmp_path, borrowed, own)
    assert (rows["own"]["00.planes"], rows["borrowed"]["00.planes"]) == ("1", "0")
    said = (feedback / "borrowed.md").read_text()
    assert "cell 2 raised ModuleNotFoundError: No module named 'fleetlab_instructor'" in said, said  # absent


def test_check_refuses_an_answer_function_from_the_instructors_package_and_says_why():
    taken = planes.RIGHT_ANSWERS[0].answer  # a function defined in the instructor's package
    result = check("00.planes", taken)
    assert (result.status, result.cases) == (CheckStatus.FAIL, [])
    assert "fleetlab_instructor.checks.lab00.planes.<lambda>, from the instructor's package" in result.diagnosis
    assert "scores nothing; write it yourself" in result.diagnosis


def test_check_refuses_a_learners_function_that_calls_the_instructors_answer():
    namespace = {"reference": planes.RIGHT_ANSWERS[0].answer}
    exec("def mine():\n    return dict(reference())", namespace)  # a notebook cell's function
    result = check("00.planes", namespace["mine"])
    assert result.status == CheckStatus.FAIL and "from the instructor's package" in result.diagnosis


def test_a_learners_own_function_passes_as_before():
    namespace = {"planes": dict(OWN_ANSWER)}
    exec("def mine():\n    return dict(planes)", namespace)
    assert check("00.planes", namespace["mine"]).status == CheckStatus.PUBLIC_PASS


def test_check_refuses_the_librarys_own_callback_worker_as_the_answer_to_04_callback():
    from fleetlab.services.stepfunctions.worker import answer_task

    namespace = {"answer_task": answer_task}
    exec("def respond(sfn, token, work, heartbeat_seconds, clock):\n"
         "    return answer_task(sfn, token, work, heartbeat_seconds, clock)", namespace)
    for taken in (answer_task, namespace["respond"]):
        result = check("04.callback", taken)
        assert result.status == CheckStatus.FAIL, result.diagnosis
        assert "answer_task, the library's own answer to 04.callback" in result.diagnosis
