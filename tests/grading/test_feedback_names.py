"""Feedback names a cell as the learner sees it, an untouched exercise "not attempted", a syntax error the learner's."""

import os
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from fleetlab_instructor.grade.cells import cell_name
from fleetlab_instructor.grade.grade import CaseReport, CheckReport, GradeRow, Limits, grade_notebooks
from fleetlab_instructor.grade.submissions import Submission
from fleetlab_instructor.report import exports, gradebook
from fleetlab_instructor.report.feedback import FITTED, UNNAMED, feedback_text, misconception, write_feedback
from fleetlab_instructor.report.room import room_summary

from fleetlab.course.grading.results import NOT_YET_ADVICE

REPO = Path(__file__).resolve().parents[2]


def test_a_cell_is_named_by_its_place_among_code_cells_and_the_exercise_above_it():
    nb = new_notebook(cells=[new_markdown_cell("# Lab 01\n\nintro"), new_code_cell("import fleetlab"),
                             new_markdown_cell("## Exercise 01.visibility\nWrite it."), new_code_cell("def f(): ..."),
                             new_markdown_cell("## Wrapping up"), new_code_cell("lab.close()")])
    assert [cell_name(nb, index) for index in (1, 3, 5)] == [
        "code cell 1", "code cell 2 (exercise 01.visibility)", "code cell 3"]


def test_every_exercise_cell_of_the_labs_is_named_by_its_check():
    for path in sorted((REPO / "labs").glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for index, cell in enumerate(nb.cells):
            for check_id in re.findall(r"""check\(\s*["'](\d\d\.\w+)["']""", cell.source):
                assert cell_name(nb, index).endswith(f"(exercise {check_id})"), (path.name, index)


def one_learner(error: str, status: str, diagnosis: str) -> tuple[list[tuple[Submission, GradeRow]], gradebook.Gradebook]:
    sub = Submission(Path("ada/01_at_least_once.ipynb"), "ada", "01")
    row = GradeRow(str(sub.path), {"01.visibility": 0.0, "01.heartbeat": 0.0}, {}, error,
                   {"01.visibility": CheckReport(status, diagnosis), "01.heartbeat": CheckReport(status, diagnosis)})
    return [(sub, row)], gradebook.build([sub], [row])


def test_an_untouched_exercise_is_not_attempted_never_run_this_check_again():
    graded, book = one_learner("", "not yet", NOT_YET_ADVICE)
    text = feedback_text("ada", graded, book.maxima)
    assert "run this check again" not in text
    assert text.count("not attempted: the answer is as it was handed out") == 2
    tests = exports.results_json(graded, book)["tests"]
    assert all(test["output"].startswith("not attempted") for test in tests)


def test_a_syntax_error_in_an_exercise_cell_is_the_learners_syntax_error_for_that_exercise_only():
    error = ("code cell 9 (exercise 01.visibility) raised SyntaxError: invalid syntax (line 3); "
             "code cell 4 raised NameError: name 'x' is not defined")
    graded, book = one_learner(error, "not yet", "not attempted: no `choose_visibility` defined")
    text = feedback_text("ada", graded, book.maxima)
    visibility, heartbeat = text.split("### 01.visibility")[1], text.split("### 01.heartbeat")[1].split("###")[0]
    assert "a syntax error in your code cell 9 (exercise 01.visibility): SyntaxError: invalid syntax (line 3)" \
        in visibility
    assert "not attempted" not in visibility.split("###")[0]
    assert "not attempted: no `choose_visibility` defined" in heartbeat and "syntax" not in heartbeat


def test_a_hidden_case_the_learners_code_raised_on_is_named_by_its_error_not_as_a_fitted_answer():
    typo = CaseReport("", True, "fail", "your code raised NameError: name 'qeue' is not defined (in planes, line 3)")
    for public_passed in (True, False):
        said = misconception("00.planes", typo, public_passed=public_passed)
        assert said == "your code raised NameError on an input the public cases do not show"
        assert "written in for" not in said


def test_an_unnamed_hidden_failure_is_called_fitted_only_when_the_public_cases_pass():
    unnamed = CaseReport("", True, "fail", "'work queues' is missing")
    assert misconception("00.planes", unnamed, public_passed=True) == FITTED
    assert misconception("00.planes", unnamed, public_passed=False) == UNNAMED
    report = CheckReport("fail", "", (CaseReport("event bus", False, "fail", "'event bus' is missing"), unnamed))
    row = GradeRow("n", {"00.planes": 0.0}, {}, "", {"00.planes": report})
    sub = Submission(Path("ada/00_lab.ipynb"), "ada", "00")
    text = feedback_text("ada", [(sub, row)], gradebook.build([sub], [row]).maxima)
    assert f"- hidden case 1: fail; it points to: {UNNAMED}" in text and "written in for" not in text


def test_the_room_orders_equally_common_misconceptions_by_name_whatever_order_the_rows_come_in():
    def failed(learner: str, diagnosis: str) -> tuple[Submission, GradeRow]:
        cases = (CaseReport("a", False, "fail", diagnosis),)
        return (Submission(Path(f"{learner}/00_lab.ipynb"), learner, "00"),
                GradeRow(learner, {"00.planes": 0.0}, {}, "", {"00.planes": CheckReport("fail", diagnosis, cases)}))

    graded = [failed("ann", "zebra went wrong. More."), failed("bob", "apple went wrong. More.")]
    summaries = []
    for order in (graded, graded[::-1]):
        subs, rows = [sub for sub, _ in order], [row for _, row in order]
        summaries.append(room_summary(gradebook.build(subs, rows), subs, rows))
    assert summaries[0] == summaries[1]
    assert [what for what, _ in summaries[0][0].misconceptions] == ["apple went wrong.", "zebra went wrong."]


EXERCISE_CELLS = {  # learner -> the exercise cell's answer, as the learner left it
    "untouched": "def planes():\n    # YOUR CODE HERE\n    raise NotImplementedError",
    "syntax": "def planes():\n    return {'event bus': 'control'",
    "typo": "def planes():\n    return qeue",
}


def lab00_notebook(answer: str) -> nbformat.NotebookNode:
    """Lab 00 as a learner sees it: markdown between code cells, the exercise's cell, and a last cell that raises."""
    return new_notebook(cells=[
        new_markdown_cell("# Lab 00"), new_code_cell("from fleetlab.course.grading import check"),
        new_markdown_cell("Some reading."), new_markdown_cell("## Exercise 00.planes\nWrite `planes()`."),
        new_code_cell(f'{answer}\n\ncheck("00.planes", planes)'),
        new_markdown_cell("## Wrapping up"), new_code_cell("done = not_defined_here")])


@pytest.fixture(scope="module")
def graded_feedback(tmp_path_factory) -> dict[str, tuple[GradeRow, str]]:
    """Each EXERCISE_CELLS notebook through the grader, and its learner's feedback file: learner -> (row, text)."""
    folder = tmp_path_factory.mktemp("cells")
    subs = [Submission(folder / f"{learner}_00_orientation.ipynb", learner, "00") for learner in EXERCISE_CELLS]
    for sub, answer in zip(subs, EXERCISE_CELLS.values(), strict=True):
        nbformat.write(lab00_notebook(answer), sub.path)
    rows = grade_notebooks([sub.path for sub in subs], grader_env=dict(os.environ), limits=Limits(cell=60))
    texts = {path.stem: path.read_text() for path in write_feedback(gradebook.build(subs, rows), subs, rows, folder)}
    return {sub.learner: (row, texts[sub.learner]) for sub, row in zip(subs, rows, strict=True)}


def test_through_the_grader_a_cell_is_named_among_code_cells_never_by_its_place_among_all_cells(graded_feedback):
    row, text = graded_feedback["untouched"]
    assert "code cell 3 raised NameError" in row.error and not re.search(r"\bcell [67]\b", row.error)
    assert "code cell 3 raised NameError" in text


def test_through_the_grader_an_untouched_exercise_is_not_attempted(graded_feedback):
    _, text = graded_feedback["untouched"]
    assert "not attempted" in text and "run this check again" not in text and "syntax" not in text


def test_through_the_grader_a_syntax_error_is_the_learners_syntax_error_in_that_exercises_cell(graded_feedback):
    _, text = graded_feedback["syntax"]
    assert "a syntax error in your code cell 2 (exercise 00.planes): SyntaxError" in text
    assert "not attempted" not in text


def test_through_the_grader_a_typo_is_told_as_the_error_it_raised_never_as_a_fitted_answer(graded_feedback):
    _, text = graded_feedback["typo"]
    assert "- hidden case 1: fail; it points to: your code raised NameError on an input the public cases do not " \
           "show" in text
    assert "written in for" not in text


def test_a_key_is_named_by_its_shared_name_else_by_the_entries_that_carry_it_and_a_stray_shared_name_is_refused():
    from fleetlab.core.errors import InvalidInput
    from fleetlab_instructor.checks import InstructorSide, WrongAnswer

    wrong = [WrongAnswer("rounds up", None, "", mistake="too-many"), WrongAnswer("ignores reserved", None, "",
                                                                               mistake="too-many"),
             WrongAnswer("one short", None, "", mistake="too-few"), WrongAnswer("unkeyed", None, "")]
    side = InstructorSide("00.planes", wrong_answers=wrong, shared_mistakes={"too-few": "calls left idle"})
    assert [side.label_of(key) for key in ("too-many", "too-few", "", "unknown")] == [
        "rounds up or ignores reserved", "calls left idle", "", ""]
    with pytest.raises(InvalidInput, match="^shared_mistakes: 00.planes: no wrong answer carries too-much"):
        InstructorSide("00.planes", wrong_answers=wrong, shared_mistakes={"too-much": "x"})
    with pytest.raises(InvalidInput, match="^mistake: "):
        InstructorSide("00.planes", wrong_answers=[WrongAnswer("bad", None, "", mistake="Too Many")])
