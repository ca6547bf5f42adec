"""Every check is provably right, on moto and on moto-server.

Each check's instructor's side (``fleetlab_instructor.checks``) holds its
hidden cases, a reference answer, right-but-different answers and known
wrong answers. The reference and each right answer pass every public
and hidden case. Each wrong answer is rejected: by the public cases (with
the diagnosis a learner sees in the notebook) when it is marked public, else
only by the hidden cases; a failed case of it reports its mistake key when the
entry carries one, and the feedback names it by that key. The fixture lab's checks are held to the same rules.

A graded run (hidden cases included) is the grader's: each answer is
rebuilt and called in a process of its own (``AnswerHost``) while the cases
run and are judged here; a public case in the notebook runs in the kernel.

Everything runs on moto. moto-server serves the same moto models over HTTP,
so there each check's reference proves the check over the wire (but for the
chaos-day checks, ``OVER_THE_WIRE_ALREADY``), and the catalogues run only for
the checks in ``WIRE``, whose cases meet a way the two differ on the wire.
"""

import base64
from pathlib import Path

import cloudpickle
import pytest
from fleetlab_instructor.checks import full_check, side_of
from fleetlab_instructor.grade.grade import CheckReport, GradeRow, case_report
from fleetlab_instructor.grade.submissions import Submission
from fleetlab_instructor.report import gradebook
from fleetlab_instructor.report.feedback import FITTED, blank_out, hidden_only_values, misconception, public_cases_pass
from fleetlab_instructor.report.room import room_summary

from fleetlab.course import lab
from fleetlab.course.grading import registry, run_check
from fleetlab.course.judge.answerhost import AnswerHost
from fleetlab.course.judge.server import judge_one
from fleetlab.course.grading.results import CheckStatus
from fleetlab.course.grading.runner import CheckBackend

from .conftest import load_fixture_checks

BACKENDS = ["moto", "moto-server"]
WIRE = {"03.redrive"}
"""Checks whose cases meet a difference between moto and moto-server on the wire (docs/fidelity.md):
StartMessageMoveTask fails as a NotImplementedError in-process and as an HTTP 500 over HTTP, and the
redrive must fall back on either."""


def _fixture_lab_checks():
    with registry.isolated():
        load_fixture_checks()
        return [(full_check(check.id), side_of(check.id)) for check in registry.checks_of("99")]


SHIPPED = [(full_check(check.id), side_of(check.id))
           for lab_id in registry.shipped_labs() for check in registry.checks_of(lab_id)]
SIDES = SHIPPED + _fixture_lab_checks()
SHIPPED_IDS = {check.id for check, _ in SHIPPED}
OVER_THE_WIRE_ALREADY = {"07.configure", "07.defects"}
"""Checks whose cases are chaos days: ``tests/test_chaos_day_server.py`` runs a 1,000-step day on moto-server, and
what these checks add to a day (its scoring) never crosses the wire, so their references run on moto only."""
REFERENCES = [(check, side, name) for name in BACKENDS for check, side in SIDES
              if name == "moto" or check.id not in OVER_THE_WIRE_ALREADY]
RIGHT = [(check, right, name) for name in BACKENDS for check, side in SIDES for right in side.right_answers
         if name == "moto" or check.id in WIRE]
WRONG = [(check, wrong, name) for name in BACKENDS for check, side in SIDES for wrong in side.wrong_answers
         if name == "moto" or check.id in WIRE]


@pytest.fixture(scope="module")
def backend(request):
    """The backend a check opens on first use (``$FLEETLAB_BACKEND``), one at a time."""
    with pytest.MonkeyPatch.context() as patch:
        lab.shutdown()
        patch.setenv("FLEETLAB_BACKEND", request.param)
        yield request.param
        lab.shutdown()


@pytest.fixture(scope="session")
def answers():
    """The processes the graded runs' answers are rebuilt and called in, one zygote per worker (the catalogues
    live in the instructor's package, so taking an answer from there is not refused here)."""
    with AnswerHost(refuse_borrowed=False) as host:
        yield host


def graded(check, answer, host):
    """The grader's verdict (plain data, as the judge writes it) on ``answer``, called in ``host``'s process."""
    entry = {"pickle": base64.b64encode(cloudpickle.dumps(answer)).decode("ascii")}
    with CheckBackend() as backends:
        return judge_one(check, check.hidden, entry, backends, host)


def passed(verdict):
    return verdict["status"] == str(CheckStatus.PASS) and all(case["status"] == "pass" for case in verdict["cases"])


@pytest.mark.parametrize(("check", "side"), SIDES, ids=[check.id for check, _ in SIDES])
def test_every_check_has_a_reference_both_catalogues_and_hidden_cases(check, side):
    assert side.reference is not None, f"{check.id} has no reference answer"
    assert side.right_answers, f"{check.id} lists no right-but-different answers"
    assert side.wrong_answers, f"{check.id} lists no known wrong answers"
    assert any(wrong.public for wrong in side.wrong_answers), f"{check.id}: no public case catches a known mistake"
    assert check.hidden, f"{check.id} has no hidden cases"


@pytest.mark.parametrize(("check", "side", "backend"), REFERENCES, indirect=["backend"],
                         ids=[f"{name}-{check.id}" for check, _, name in REFERENCES])
def test_the_reference_passes_every_case(check, side, backend, answers):
    verdict = graded(check, side.reference, answers)
    assert passed(verdict), verdict["diagnosis"]


@pytest.mark.parametrize(("check", "right", "backend"), RIGHT, indirect=["backend"],
                         ids=[f"{name}-{c.id}: {r.name}" for c, r, name in RIGHT])
def test_each_right_but_different_answer_passes_every_case(check, right, backend, answers):
    verdict = graded(check, right.answer, answers)
    assert passed(verdict), verdict["diagnosis"]


@pytest.mark.parametrize(("check", "wrong", "backend"), WRONG, indirect=["backend"],
                         ids=[f"{name}-{c.id}: {w.name}" for c, w, name in WRONG])
def test_each_known_wrong_answer_is_rejected_with_its_diagnosis(check, wrong, backend, answers):
    if wrong.public:
        in_notebook = run_check(check, wrong.answer)
        assert in_notebook.status == CheckStatus.FAIL, f"the public cases let it through: {in_notebook.diagnosis}"
        assert wrong.expect in in_notebook.diagnosis, "the learner would not see the expected diagnosis"
        reported = {case.mistake for case in in_notebook.cases if case.status == CheckStatus.FAIL}
        assert not wrong.mistake or wrong.mistake in reported, f"no failed case reports {wrong.mistake!r}: {reported}"
        return
    verdict = graded(check, wrong.answer, answers)  # the grader's run: the public cases come first
    public = [case for case in verdict["cases"] if not case["hidden"]]
    assert public and all(case["status"] == "pass" for case in public), \
        f"public=False means only hidden cases catch it: {[c['diagnosis'] for c in public]}"
    assert verdict["status"] == str(CheckStatus.FAIL)
    failing_hidden = [case for case in verdict["cases"] if case["hidden"] and case["status"] == "fail"]
    assert any(wrong.expect in case["diagnosis"] for case in failing_hidden), [c["diagnosis"] for c in failing_hidden]
    reported = {case["mistake"] for case in failing_hidden}
    assert not wrong.mistake or wrong.mistake in reported, f"no hidden case reports {wrong.mistake!r}: {reported}"
    if check.id in SHIPPED_IDS:  # the learner's feedback names this entry by its key, else calls it fitted
        named = {misconception(check.id, case_report(case), public_passed=True) for case in failing_hidden}
        if wrong.mistake:
            label = side_of(check.id).label_of(wrong.mistake)
            assert wrong.name in label or label in side_of(check.id).shared_mistakes.values(), label
            assert blank_out(label, hidden_only_values(check.id)) in named, named
        else:
            assert FITTED in named, named


NAMED_BY_KEY = [("03.batch", "stops on FIFO but reports only the failed record"),  # its words say "it is lost" too
                ("07.configure", "the defaults, whatever the day")]  # its records also expire before the replay


@pytest.mark.parametrize(("check_id", "name"), NAMED_BY_KEY)
@pytest.mark.parametrize("backend", ["moto"], indirect=True)
def test_the_feedback_and_the_room_name_each_failed_case_by_its_key_not_by_words_it_shares(check_id, name, backend,
                                                                                           answers):
    check, side = full_check(check_id), side_of(check_id)
    wrong = next(wrong for wrong in side.wrong_answers if wrong.name == name)
    verdict = graded(check, wrong.answer, answers)
    report = CheckReport(verdict["status"], verdict["diagnosis"], tuple(map(case_report, verdict["cases"])))
    lab_id = check_id.split(".", 1)[0]
    sub, row = Submission(Path(f"ada/{lab_id}_lab.ipynb"), "ada", lab_id), GradeRow("n", {}, {}, "", {check_id: report})
    summary = room_summary(gradebook.build([sub], [row]), [sub], [row])
    [in_room] = [seen for seen in summary if seen.check_id == check_id]
    assert in_room.misconceptions == ((side.label_of(wrong.mistake), 1),) and name in in_room.misconceptions[0][0]
    hidden = [case for case in report.cases if case.hidden and case.status == "fail"]
    said = {misconception(check_id, case, public_passed=public_cases_pass(report.cases)) for case in hidden}
    assert hidden and said == {side.label_of(wrong.mistake)}, said


def test_the_wire_checks_are_shipped_checks():
    assert WIRE <= {check.id for check, _ in SHIPPED}
