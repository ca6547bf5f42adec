"""This kernel's grading session: ``check()`` for the learner, ``grade_session()`` for the grader.

``check(id, answer)`` runs the public cases, records and shows the result,
and remembers the answer. The grader appends one cell calling
``grade_session(nonce, hidden)``, where ``hidden`` hands over the hidden
cases (``handover``): it re-runs every remembered answer with public and
hidden cases and emits one ``display_data`` of type ``GRADES_MIME`` carrying
the grader's nonce: per check its status, points and each case's status and
diagnosis (a hidden case's name left out). The payload is read by the grader
alone; a learner's feedback keeps hidden cases' inputs out of it.

``FLEETLAB_EXPECT_CHECKS=pass`` (or ``not-yet``) makes ``check()`` raise when a
result differs: CI runs the instructor notebooks with ``pass`` (in a notebook
that means every public case passes) and the student notebooks with ``not-yet``.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any

from fleetlab.core.errors import FleetlabError
from fleetlab.core.settings import settings
from fleetlab.course.grading import handover, learner, progress, registry
from fleetlab.course.grading.display import show
from fleetlab.course.grading.results import CaseResult, CheckResult, CheckStatus, refused
from fleetlab.course.grading.runner import CheckBackend, run_check

GRADES_MIME = "application/vnd.fleetlab.grades+v1+json"
EXPECT_ENV = "FLEETLAB_EXPECT_CHECKS"

_answers: dict[str, Any] = {}


class UnexpectedCheckStatus(FleetlabError):
    """A check's status differs from ``$FLEETLAB_EXPECT_CHECKS`` (a CI run of the notebooks)."""


def check(check_id: str, answer: Any) -> CheckResult:
    """Run the public cases of ``check_id`` on ``answer``; record, display and return the result."""
    exercise = registry.get_check(check_id)
    _answers[check_id] = answer
    result = _judge(exercise, answer)
    _save_progress(result)
    show(result)
    _enforce_expectation(result)
    return result


def grade_session(nonce: str, hidden: str, labs: tuple[str, ...] = ()) -> dict[str, Any]:
    """Grade every check of ``labs`` and every answer this kernel checked, hidden cases included.

    The answer to a check is what the notebook's namespace holds under the
    check's answer name (``Check.answer_name``), whether or not ``check()``
    ever ran; else the answer last given to ``check()``; else the check is
    "not yet" with the diagnosis "not attempted: no `<name>` defined".
    ``hidden`` is the grader's handover of each check's hidden cases
    (``handover.encode``); a graded answer whose check it lacks raises
    HiddenCasesMissing. Emits and returns the grades.

    Output the learner's code prints while the hidden cases run is discarded,
    so no hidden input can reach the notebook. The checks run on the running
    lab's backend, or on one opened here (on first need) and closed afterwards:
    the grading cell usually comes after ``lab.close()``.
    """
    grades: dict[str, Any] = {}
    cases = handover.decode(hidden)
    quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
    namespace = _notebook_namespace()
    graded = [check.id for lab in labs for check in registry.checks_of(lab)]
    graded += [check_id for check_id in _answers if check_id not in graded]
    with quiet[0], quiet[1], CheckBackend() as backends:
        for check_id in graded:
            check = registry.get_check(check_id)
            found, answer = _answer_to(check, namespace)
            if not found:
                grades[check_id] = _not_attempted(check)
                continue
            if check_id in cases:
                check = check.with_hidden(cases[check_id])
            result = _judge(check, answer, include_hidden=True, backends=backends)
            grades[check_id] = {"status": str(result.status), "points": result.points, "max_points": result.max_points,
                                "diagnosis": result.diagnosis, "cases": [_case_grade(case) for case in result.cases]}
    every_lab = sorted({*labs, *(check_id.split(".", 1)[0] for check_id in _answers)})
    expected = {check.id: check.points for lab in every_lab for check in registry.checks_of(lab)}
    payload = {"nonce": nonce, "checks": grades, "expected": expected}
    _emit(payload)
    return payload


def _judge(check: registry.Check, answer: Any, **run: Any) -> CheckResult:
    """``run_check``, unless the answer is taken from the instructor's package or is the library's own
    answer to the exercise: then it scores nothing, and says why."""
    if borrowed := learner.borrowed_answer(answer, check.id):
        return refused(check, f"this answer uses {borrowed}: a check grades your own answer, so it scores "
                              "nothing; write it yourself", graded=run.get("include_hidden", False))
    return run_check(check, answer, **run)


def _notebook_namespace() -> dict[str, Any]:
    """The running notebook's global names (empty outside IPython)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    shell = get_ipython()
    return shell.user_ns if shell is not None else {}


def _answer_to(check: registry.Check, namespace: dict[str, Any]) -> tuple[bool, Any]:
    """``(True, answer)`` found by the check's answer name, else given to ``check()``; ``(False, None)`` if neither."""
    if check.answer_name and check.answer_name in namespace:
        return True, namespace[check.answer_name]
    if check.id in _answers:
        return True, _answers[check.id]
    return False, None


def _not_attempted(check: registry.Check) -> dict[str, Any]:
    missing = f"no `{check.answer_name}` defined" if check.answer_name else "its check() cell never ran"
    return {"status": str(CheckStatus.NOT_YET), "points": 0.0, "max_points": check.points,
            "diagnosis": f"not attempted: {missing}", "cases": []}


def _case_grade(case: CaseResult) -> dict[str, Any]:
    """One case's line of the grades payload; a hidden case's name (it may state its input) is left out."""
    return {"name": "" if case.hidden else case.name, "hidden": case.hidden, "status": str(case.status),
            "diagnosis": case.diagnosis}


def forget() -> None:
    """Forget every remembered answer (a fresh session)."""
    _answers.clear()


def _save_progress(result: CheckResult) -> None:
    try:
        progress.record(result)
    except OSError as exc:  # a read-only home must not break the check itself
        warnings.warn(
            f"fleetlab could not save progress to {progress.progress_file()} ({exc}); "
            "set FLEETLAB_HOME to a writable folder",
            stacklevel=3,
        )


def _emit(payload: dict[str, Any]) -> None:
    from IPython.display import display

    summary = f"fleetlab: graded {len(payload['checks'])} checks"
    display({GRADES_MIME: payload, "text/plain": summary}, raw=True)


def _enforce_expectation(result: CheckResult) -> None:
    """UnexpectedCheckStatus when ``result`` is not what ``$FLEETLAB_EXPECT_CHECKS`` requires (nothing when unset)."""
    wanted = settings().expect_checks
    if wanted is None:
        return
    met = result.passed if wanted == CheckStatus.PASS else result.status == CheckStatus.NOT_YET
    if not met:
        raise UnexpectedCheckStatus(
            f"check {result.id} says {str(result.status)!r} where {EXPECT_ENV} expects {wanted!r}: {result.diagnosis}"
        )
