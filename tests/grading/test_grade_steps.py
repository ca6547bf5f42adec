"""Each grading step on its own, with a scripted kernel standing in for a real one."""

import nbformat
import pytest
from fleetlab_instructor.grading.grade import (
    STEPS,
    CaseReport,
    CheckReport,
    Job,
    Limits,
    add_hidden_cases,
    execute,
    grade_job,
    prepare,
    report,
    score,
)
from fleetlab_tools.kernel import CellRun, KernelStartFailed
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from fleetlab.course.grading import GRADES_MIME


class ScriptedKernel:
    """Answers run_cell from a script: {cell index: (status, error)}; anything else is ok."""

    def __init__(self, nb, script=None, grades=None):
        self.nb, self.script, self.grades = nb, script or {}, grades
        self.alive, self.ran, self.stopped = True, [], False

    def run_cell(self, index, timeout):
        self.ran.append((index, timeout))
        status, error = self.script.get(index, ("ok", ""))
        if status == "dead":
            self.alive = False
        if status == "ok" and self.grades is not None and "grade_session" in self.nb.cells[index].source:
            self.nb.cells[index].outputs = self.grades(self.nb.cells[index].source)
        return CellRun(index, status, 0.01, error)

    def shutdown(self):
        self.stopped = True


def notebook(*sources):
    nb = new_notebook(cells=[new_markdown_cell("# Lab")] + [new_code_cell(s) for s in sources])
    return nbformat.writes(nb)


SHORT = Limits(cell=5, notebook=20, grading=7)


def job(text, script=None, grades=None, limits=SHORT):
    made = []

    def start_kernel(nb):
        made.append(ScriptedKernel(nb, script, grades))
        return made[-1]

    new = Job("nb.ipynb", text, limits, start_kernel, nonce="n0nce")
    new.made = made
    return new


def grades_output(payload):
    return [new_output("display_data", data={GRADES_MIME: payload, "text/plain": "graded"})]


def genuine(source, points=2):
    assert '"n0nce"' in source  # the grading cell carries the nonce
    return grades_output(
        {
            "nonce": "n0nce",
            "checks": {"99.a": {"status": "pass", "points": points, "max_points": 2}},
            "expected": {"99.a": 2, "99.b": 3},
        }
    )


def test_the_steps_are_named_and_in_order():
    assert [name for name, _ in STEPS] == ["prepare", "execute", "add hidden cases", "score", "report"]


def test_prepare_clears_outputs_and_notes_the_checks_the_source_calls():
    text = nbformat.writes(
        new_notebook(
            cells=[
                new_code_cell(
                    'check("99.a", f)\ncheck( "99.b" , g)',
                    execution_count=4,
                    outputs=[new_output("stream", name="stdout", text="old")],
                )
            ]
        )
    )
    prepared = job(text)
    prepare(prepared)
    cell = prepared.nb.cells[0]
    assert (cell.outputs, cell.execution_count) == ([], None)
    assert prepared.max_points == {"99.a": None, "99.b": None}


def test_prepare_records_an_unreadable_notebook():
    broken = job("{ not a notebook")
    prepare(broken)
    assert broken.nb is None and broken.errors[0].startswith("not a readable notebook")


def test_execute_runs_code_cells_and_goes_on_after_an_error():
    running = job(notebook("x = 1", "", "1/0", "y = 2"), script={3: ("error", "ZeroDivisionError: division by zero")})
    prepare(running)
    execute(running)
    assert [index for index, _ in running.kernel.ran] == [1, 3, 4]  # the empty cell is skipped
    assert running.errors == ["cell 4 raised ZeroDivisionError: division by zero"]


@pytest.mark.parametrize(
    ("status", "error", "message"),
    [("timeout", "timed out after 5 s", "cell 2 timed out after 5 s"), ("dead", "", "the kernel died in cell 2")],
)
def test_execute_stops_at_a_hang_or_a_dead_kernel(status, error, message):
    running = job(notebook("loop()", "never"), script={1: (status, error)})
    prepare(running)
    execute(running)
    assert [index for index, _ in running.kernel.ran] == [1]
    assert running.errors == [message]


def test_each_cell_gets_at_most_what_is_left_of_the_notebooks_time():
    running = job(notebook("a", "b"), limits=Limits(cell=60, notebook=20))
    prepare(running)
    execute(running)
    assert all(timeout <= 20 for _, timeout in running.kernel.ran)


def test_execute_records_a_kernel_that_would_not_start():
    def refuse(nb):
        raise KernelStartFailed("the kernel did not start (boom); check that ipykernel is installed")

    failing = Job("nb.ipynb", notebook("a"), Limits(), refuse)
    prepare(failing)
    execute(failing)
    assert failing.kernel is None and "did not start" in failing.errors[0]


def test_add_hidden_cases_runs_one_grading_cell_with_the_nonce():
    grading = job(notebook("a"), grades=genuine)
    prepare(grading)
    execute(grading)
    add_hidden_cases(grading)
    assert grading.grading_cell == len(grading.nb.cells) - 1
    assert grading.kernel.ran[-1] == (grading.grading_cell, 7)


def test_no_grading_after_the_kernel_died():
    dead = job(notebook("crash()"), script={1: ("dead", "")})
    prepare(dead)
    execute(dead)
    add_hidden_cases(dead)
    assert dead.grading_cell is None and len(dead.kernel.ran) == 1


def test_a_failing_grading_cell_is_recorded_without_its_message():
    failing = job(notebook("a"), script={2: ("error", "ValueError: hidden input 12345")})
    prepare(failing)
    execute(failing)
    add_hidden_cases(failing)
    assert failing.grading_cell is None
    assert failing.errors == ["grading failed (ValueError)"]


def graded(outputs_for):
    scored = job(notebook('check("99.a", f)'), grades=outputs_for)
    for step in (prepare, execute, add_hidden_cases, score):
        step(scored)
    return scored


def test_score_reads_the_points_of_the_output_with_the_nonce():
    scored = graded(genuine)
    assert scored.scores == {"99.a": 2.0}
    assert scored.max_points == {"99.a": 2.0, "99.b": 3.0}
    assert scored.errors == []


def test_score_ignores_outputs_without_the_nonce():
    scored = graded(
        lambda source: grades_output(
            {"nonce": "guessed", "checks": {"99.a": {"status": "pass", "points": 2, "max_points": 2}}, "expected": {}}
        )
    )
    assert scored.scores == {} and scored.errors == ["no grades were reported"]


def test_score_withholds_points_when_the_nonce_appears_twice():
    scored = graded(lambda source: genuine(source) + genuine(source))
    assert scored.scores == {} and scored.errors == ["grade output was forged; scores withheld"]


def test_score_caps_points_at_the_maximum_and_pays_a_fail_only_its_passing_cases():
    capped = graded(lambda source: genuine(source, points=50))
    assert capped.scores == {"99.a": 2.0}
    fail = {"99.a": {"status": "fail", "points": 1.5, "max_points": 2}}
    failed = graded(lambda source: grades_output({"nonce": "n0nce", "expected": {}, "checks": fail}))
    assert failed.scores == {"99.a": 1.5}
    for status in ("error", "not yet", "public pass"):
        unscored = {"99.a": {"status": status, "points": 2, "max_points": 2}}
        assert graded(lambda source: grades_output({"nonce": "n0nce", "expected": {}, "checks": unscored})).scores == {
            "99.a": 0.0
        }


def test_score_withholds_malformed_grades():
    scored = graded(lambda source: grades_output({"nonce": "n0nce", "checks": {"99.a": {}}, "expected": {}}))
    assert scored.scores == {} and scored.errors[0].startswith("grades were malformed")


def test_report_lists_every_known_check_with_zero_when_not_earned():
    reported = graded(genuine)
    reported.errors.append("cell 3 raised KeyError: 'body'")
    report(reported)
    row = reported.row
    assert (row.notebook, row.scores, row.total) == ("nb.ipynb", {"99.a": 2.0, "99.b": 0.0}, 2.0)
    assert row.error == "cell 3 raised KeyError: 'body'"


def test_grade_job_always_stops_the_kernel_and_reports_a_broken_step(monkeypatch):
    broken = job(notebook("a"), grades=genuine)

    def explode(job):
        raise RuntimeError("zmq socket closed")

    monkeypatch.setattr(
        "fleetlab_instructor.grading.grade.STEPS",
        (("prepare", prepare), ("execute", execute), ("add hidden cases", explode), ("report", report)),
    )
    row = grade_job(broken)
    assert broken.kernel.stopped
    assert row.error == "grading step 'add hidden cases' failed (zmq socket closed)"
    assert row.total == 0


def test_score_keeps_each_case_for_the_feedback():
    cases = [{"name": "public one", "hidden": False, "status": "pass", "diagnosis": ""},
             {"name": "", "hidden": True, "status": "fail", "diagnosis": "a second publish of the same alert"}]
    check = {"status": "fail", "points": 1, "max_points": 2, "diagnosis": "a second publish", "cases": cases}
    scored = graded(lambda source: grades_output({"nonce": "n0nce", "expected": {}, "checks": {"99.a": check}}))
    assert scored.checks == {"99.a": CheckReport("fail", "a second publish", (
        CaseReport("public one", False, "pass", ""),
        CaseReport("", True, "fail", "a second publish of the same alert"),
    ))}
    malformed = {**check, "cases": [{"name": "no status"}]}
    withheld = graded(lambda source: grades_output({"nonce": "n0nce", "expected": {}, "checks": {"99.a": malformed}}))
    assert withheld.checks == {} and withheld.errors[0].startswith("grades were malformed")
