"""Each grading step on its own, with a scripted kernel and a scripted judge standing in for real ones."""

import os
import threading

import nbformat
import pytest
from fleetlab_instructor.grade.grade import (
    ANSWERS_FILE,
    STEPS,
    CaseReport,
    CheckReport,
    Job,
    Limits,
    execute,
    grade_job,
    hand_in,
    judge,
    prepare,
    report,
)
from fleetlab_instructor.grade.judging import Verdicts
from fleetlab_tools.kernel import CellRun, KernelStartFailed
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output


class ScriptedKernel:
    """Answers run_cell from a script: {cell index: (status, error)}; anything else is ok.

    The hand-in cell, when ok, writes ``answers`` (bytes) to the job's answers file.
    """

    def __init__(self, nb, workdir, script=None, answers=b'{"answers": {}}'):
        self.nb, self.workdir, self.script, self.answers = nb, workdir, script or {}, answers
        self.alive, self.ran, self.stopped = True, [], False

    def run_cell(self, index, timeout):
        self.ran.append((index, timeout))
        status, error = self.script.get(index, ("ok", ""))
        if status == "dead":
            self.alive = False
        if status == "ok" and self.answers is not None and "hand_in(" in self.nb.cells[index].source:
            (self.workdir / ANSWERS_FILE).write_bytes(self.answers)
        return CellRun(index, status, 0.01, error)

    def shutdown(self):
        self.stopped = True
        self.alive = False


def notebook(*sources):
    nb = new_notebook(cells=[new_markdown_cell("# Lab")] + [new_code_cell(s) for s in sources])
    return nbformat.writes(nb)


SHORT = Limits(cell=5, notebook=20, grading=7)


def job(tmp_path, text, script=None, verdicts=None, answers=b'{"answers": {}}', limits=SHORT,
        name="alice_99_fixture.ipynb"):
    made, judged = [], []

    def start_kernel(nb):
        made.append(ScriptedKernel(nb, tmp_path, script, answers))
        return made[-1]

    def scripted_judge(checks, handed_in, seconds):
        judged.append(([check.id for check in checks], handed_in, seconds))
        return verdicts() if verdicts else Verdicts()

    new = Job(name, text, limits, start_kernel, scripted_judge, tmp_path)
    new.made, new.judged = made, judged
    return new


def case(status, hidden=False, name="a case", diagnosis="", mistake=""):
    return {"name": "" if hidden else name, "hidden": hidden, "status": status, "diagnosis": diagnosis,
            "mistake": mistake}


def visibility(*statuses, status="pass"):
    """A verdict on 99.visibility (2 public cases, 2 hidden, 0.5 point each) with these case statuses."""
    cases = [case(s, hidden=index >= 2, name=f"public {index}") for index, s in enumerate(statuses)]
    return {"status": status, "diagnosis": "", "cases": cases}


def test_the_steps_are_named_and_in_order():
    assert [name for name, _ in STEPS] == ["prepare", "execute", "hand in", "release the kernel", "judge", "report"]


def test_prepare_clears_outputs_and_takes_each_checks_maximum_from_the_graders_registry(fixture_lab, tmp_path):
    text = nbformat.writes(new_notebook(cells=[new_code_cell(
        'check("99.dedupe", f)\ncheck( "98.unknown" , g)', execution_count=4,
        outputs=[new_output("stream", name="stdout", text="old")])]))
    prepared = job(tmp_path, text)
    prepare(prepared)
    cell = prepared.nb.cells[0]
    assert (cell.outputs, cell.execution_count) == ([], None)
    assert prepared.max_points == {"99.dedupe": 3, "99.visibility": 2, "98.unknown": None}
    assert sorted(prepared.graded) == ["99.dedupe", "99.visibility"]
    assert all(len(check.hidden) == 2 for check in prepared.graded.values())  # the grader's, with hidden cases


def test_prepare_records_an_unreadable_notebook(tmp_path):
    broken = job(tmp_path, "{ not a notebook")
    prepare(broken)
    assert broken.nb is None and broken.errors[0].startswith("not a readable notebook")


def test_execute_runs_code_cells_and_goes_on_after_an_error(tmp_path):
    running = job(tmp_path, notebook("x = 1", "", "1/0", "y = 2"),
                  script={3: ("error", "ZeroDivisionError: division by zero")})
    prepare(running)
    execute(running)
    assert [index for index, _ in running.kernel.ran] == [1, 3, 4]  # the empty cell is skipped
    assert running.errors == ["code cell 3 raised ZeroDivisionError: division by zero"]  # markdown not counted


@pytest.mark.parametrize(
    ("status", "error", "message"),
    [("timeout", "timed out after 5 s", "code cell 1 timed out after 5 s"),
     ("dead", "", "the kernel died in code cell 1")],
)
def test_execute_stops_at_a_hang_or_a_dead_kernel(tmp_path, status, error, message):
    running = job(tmp_path, notebook("loop()", "never"), script={1: (status, error)})
    prepare(running)
    execute(running)
    assert [index for index, _ in running.kernel.ran] == [1]
    assert running.errors == [message]


def test_each_cell_gets_at_most_what_is_left_of_the_notebooks_time(tmp_path):
    running = job(tmp_path, notebook("a", "b"), limits=Limits(cell=60, notebook=20))
    prepare(running)
    execute(running)
    assert all(timeout <= 20 for _, timeout in running.kernel.ran)


def test_execute_records_a_kernel_that_would_not_start(tmp_path):
    def refuse(nb):
        raise KernelStartFailed("the kernel did not start (boom); check that ipykernel is installed")

    failing = Job("nb.ipynb", notebook("a"), Limits(), refuse, lambda *args: Verdicts(), tmp_path)
    prepare(failing)
    execute(failing)
    assert failing.kernel is None and "did not start" in failing.errors[0]


def test_hand_in_runs_one_cell_that_names_each_graded_checks_answer_and_keeps_the_bytes(fixture_lab, tmp_path):
    handing = job(tmp_path, notebook("a"), answers=b"whatever the kernel wrote")
    for step in (prepare, execute, hand_in):
        step(handing)
    cell = handing.nb.cells[-1]
    assert handing.kernel.ran[-1] == (len(handing.nb.cells) - 1, 7)
    assert "hand_in('fleetlab-answers.json', {'99.dedupe': 'handle', '99.visibility': 'visibility_timeout'})" in (
        cell.source)
    assert handing.answers == b"whatever the kernel wrote" and handing.errors == []


@pytest.mark.parametrize(("status", "error", "message"), [
    ("dead", "", "the kernel died while handing in the answers"),
    ("timeout", "timed out after 7 s", "handing in the answers timed out after 7 s"),
    ("error", "ValueError: hidden input 12345", "handing in the answers failed (ValueError)"),
])
def test_a_hand_in_that_did_not_finish_is_recorded_and_nothing_is_judged(fixture_lab, tmp_path, status, error,
                                                                         message):
    failing = job(tmp_path, notebook("a"), script={2: (status, error)})
    for step in (prepare, execute, hand_in, judge):
        step(failing)
    assert failing.answers is None and failing.judged == []
    assert failing.errors == [message]


def test_a_kernel_that_wrote_no_answers_file_is_recorded(fixture_lab, tmp_path):
    silent = job(tmp_path, notebook("a"), answers=None)
    for step in (prepare, execute, hand_in):
        step(silent)
    assert silent.answers is None and silent.errors == ["the kernel handed in no answers"]


def test_only_the_hand_in_cells_file_counts_and_only_up_to_its_weight(fixture_lab, tmp_path, monkeypatch):
    (tmp_path / ANSWERS_FILE).write_text("left by a learner's cell")
    silent = job(tmp_path, notebook("a"), answers=None)
    for step in (prepare, execute, hand_in):
        step(silent)
    assert silent.answers is None and silent.errors == ["the kernel handed in no answers"]
    monkeypatch.setattr("fleetlab_instructor.grade.grade.MAX_ANSWERS_BYTES", 2**20)
    heavy = job(tmp_path, notebook("a"), answers=b"x" * (2**20 + 1))
    for step in (prepare, execute, hand_in):
        step(heavy)
    assert heavy.answers is None and heavy.errors == ["the answers handed in weigh over 1 MB; none was graded"]


def test_no_hand_in_after_the_kernel_died(fixture_lab, tmp_path):
    dead = job(tmp_path, notebook("crash()"), script={1: ("dead", "")})
    for step in (prepare, execute, hand_in):
        step(dead)
    assert dead.answers is None and len(dead.kernel.ran) == 1


def judged(tmp_path, verdicts):
    scored = job(tmp_path, notebook('check("99.visibility", f)'), verdicts=lambda: Verdicts(verdicts))
    for step in STEPS[:-1]:
        step[1](scored)
    return scored


def test_the_kernel_is_released_before_the_judge_gets_every_graded_check(fixture_lab, tmp_path):
    scored = judged(tmp_path, {})
    assert scored.made[0].stopped
    assert scored.judged == [(["99.dedupe", "99.visibility"], b'{"answers": {}}', 7)]


def test_points_come_from_the_cases_on_the_graders_own_check(fixture_lab, tmp_path):
    scored = judged(tmp_path, {
        "99.visibility": visibility("pass", "pass", "pass", "fail", status="fail"),
        "99.dedupe": {"status": "pass", "diagnosis": "", "cases": [case("pass", hidden=index >= 2, name=f"p{index}")
                                                                  for index in range(4)]},
    })
    assert scored.scores == {"99.visibility": 1.5, "99.dedupe": 3.0}
    assert scored.max_points == {"99.visibility": 2, "99.dedupe": 3}
    assert scored.errors == []


def test_a_verdict_that_claims_more_than_its_cases_earns_only_what_its_cases_earn(fixture_lab, tmp_path):
    claims = {**visibility("pass", "fail", "fail", "fail", status="pass"), "points": 50, "max_points": 50}
    assert judged(tmp_path, {"99.visibility": claims}).scores == {"99.visibility": 0.5}


@pytest.mark.parametrize("cases", [
    ("pass", "pass"),  # the hidden cases missing
    ("pass", "pass", "pass", "pass", "pass"),  # a case too many
    (),
])
def test_a_verdict_without_exactly_the_checks_cases_earns_nothing(fixture_lab, tmp_path, cases):
    assert judged(tmp_path, {"99.visibility": visibility(*cases)}).scores == {"99.visibility": 0.0}


@pytest.mark.parametrize("status", ["error", "not yet"])
def test_a_case_that_errs_or_is_not_yet_leaves_the_check_unscored(fixture_lab, tmp_path, status):
    assert judged(tmp_path, {"99.visibility": visibility("pass", "pass", "pass", status)}).scores == {
        "99.visibility": 0.0}


def test_an_all_or_nothing_check_pays_only_a_full_pass(fixture_lab, tmp_path):
    dedupe = {"status": "fail", "diagnosis": "x", "cases": [case("pass", name="p0"), case("pass", name="p1"),
                                                           case("pass", True), case("fail", True)]}
    assert judged(tmp_path, {"99.dedupe": dedupe}).scores == {"99.dedupe": 0.0}


def test_a_verdict_on_a_check_the_grader_did_not_ask_for_is_ignored(fixture_lab, tmp_path):
    assert judged(tmp_path, {"00.planes": visibility("pass")}).scores == {}


def test_withheld_verdicts_score_nothing_and_say_why(fixture_lab, tmp_path):
    scored = job(tmp_path, notebook("a"), verdicts=lambda: Verdicts(
        {"99.visibility": visibility("pass", "pass", "pass", "pass")},
        ["the answer to 99.visibility changed the grader while it ran; scores withheld"], withheld=True))
    for _, step in STEPS[:-1]:
        step(scored)
    assert scored.scores == {} and scored.errors == [
        "the answer to 99.visibility changed the grader while it ran; scores withheld"]


def test_malformed_verdicts_are_withheld(fixture_lab, tmp_path):
    scored = judged(tmp_path, {"99.visibility": {"status": "pass", "cases": [{"name": "no status"}]}})
    assert scored.scores == {} and scored.checks == {} and scored.errors[0].startswith("grades were malformed")


def test_report_lists_every_known_check_with_zero_when_not_earned(fixture_lab, tmp_path):
    reported = judged(tmp_path, {"99.visibility": visibility("pass", "pass", "pass", "pass")})
    reported.errors.append("cell 3 raised KeyError: 'body'")
    report(reported)
    row = reported.row
    assert (row.notebook, row.scores, row.total) == ("alice_99_fixture.ipynb",
                                                     {"99.dedupe": 0.0, "99.visibility": 2.0}, 2.0)
    assert row.error == "cell 3 raised KeyError: 'body'"


def test_grade_job_always_stops_the_kernel_and_reports_a_broken_step(monkeypatch, tmp_path):
    broken = job(tmp_path, notebook("a"))

    def explode(job):
        raise RuntimeError("zmq socket closed")

    monkeypatch.setattr(
        "fleetlab_instructor.grade.grade.STEPS",
        (("prepare", prepare), ("execute", execute), ("hand in", explode), ("report", report)),
    )
    row = grade_job(broken)
    assert broken.kernel.stopped
    assert row.error == "grading step 'hand in' failed (zmq socket closed)"
    assert row.total == 0


def test_the_judges_cases_reach_the_feedback(fixture_lab, tmp_path):
    cases = [case("pass", name="public one"), case("pass", name="public two"), case("pass", hidden=True),
             case("fail", hidden=True, diagnosis="a second publish of the same alert", mistake="keyed-on-the-delivery")]
    verdict = {"status": "fail", "diagnosis": "a second publish", "cases": cases}
    scored = judged(tmp_path, {"99.visibility": verdict})
    assert scored.checks == {"99.visibility": CheckReport("fail", "a second publish", (
        CaseReport("public one", False, "pass", ""),
        CaseReport("public two", False, "pass", ""),
        CaseReport("", True, "pass", ""),
        CaseReport("", True, "fail", "a second publish of the same alert", "keyed-on-the-delivery"),
    ))}
    assert scored.scores == {"99.visibility": 1.5}


def test_a_notebook_holds_a_kernels_place_until_its_kernel_stops_and_is_judged_without_it(fixture_lab, tmp_path):
    kernels = threading.Semaphore(1)
    free_while_judged = []

    def judge_while_checking(checks, answers, seconds):
        free_while_judged.append(kernels.acquire(blocking=False))
        kernels.release()
        return Verdicts()

    held_while_kernel_ran = []
    graded = Job("alice_99_fixture.ipynb", notebook("a"), SHORT,
                 lambda nb: held_while_kernel_ran.append(not kernels.acquire(blocking=False))
                 or ScriptedKernel(nb, tmp_path), judge_while_checking, tmp_path)
    grade_job(graded, kernels)
    assert held_while_kernel_ran == [True] and free_while_judged == [True]
    assert graded.kernel.stopped and kernels.acquire(blocking=False)


@pytest.mark.parametrize("made", ["link to /dev/zero", "link to a file of the grader's", "fifo", "too big"])
def test_a_hand_in_file_the_learner_replaced_is_refused_without_reading_past_it(tmp_path, made):
    from fleetlab_instructor.grade.grade import MAX_ANSWERS_BYTES, read_handed_in

    handed_in = tmp_path / "fleetlab-answers.json"
    secret = tmp_path / "grader-only.json"
    secret.write_text('{"answers": {}}')
    if made == "link to /dev/zero":
        handed_in.symlink_to("/dev/zero")
    elif made == "link to a file of the grader's":
        handed_in.symlink_to(secret)
    elif made == "fifo":
        os.mkfifo(handed_in)  # opening it to read would wait for a writer forever
    else:
        handed_in.write_bytes(b" " * (MAX_ANSWERS_BYTES + 1))
    said = read_handed_in(handed_in)
    assert isinstance(said, str) and ("no answers" in said or "weigh over" in said)


def test_a_hand_in_file_is_read_as_written(tmp_path):
    from fleetlab_instructor.grade.grade import read_handed_in

    (tmp_path / "fleetlab-answers.json").write_bytes(b'{"answers": {}}')
    assert read_handed_in(tmp_path / "fleetlab-answers.json") == b'{"answers": {}}'
