"""This kernel's grading session: ``check()`` for the learner, ``hand_in()`` for the grader.

``check(id, answer)`` runs the public cases, records and shows the result,
and remembers the answer. In a kernel the grader runs (``FLEETLAB_GRADED=1``)
it only remembers the answer and says so: the grader's judge, a process in
which no learner cell ever ran, runs every case (``judge``). The grader
appends one cell calling ``hand_in(path, names)``, which writes each answer
the grader asks for, serialised by value, to ``path`` for the judge.

``FLEETLAB_EXPECT_CHECKS=pass`` (or ``not-yet``) makes ``check()`` raise when a
result differs: CI runs the instructor notebooks with ``pass`` (in a notebook
that means every public case passes) and the student notebooks with ``not-yet``.
"""

from __future__ import annotations

import base64
import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import cloudpickle

from fleetlab.core.errors import FleetlabError, InvalidInput
from fleetlab.core.files import write_atomically
from fleetlab.core.settings import settings
from fleetlab.course.grading import learner, progress, registry, shortcuts
from fleetlab.course.grading.display import show
from fleetlab.course.grading.results import CheckResult, CheckStatus, refused
from fleetlab.course.grading.runner import run_check

EXPECT_ENV = "FLEETLAB_EXPECT_CHECKS"
GRADED_ELSEWHERE = ("graded by the grader: in a graded notebook check() keeps your answer and runs no case; "
                    "the grader runs them all")

_answers: dict[str, Any] = {}


class UnexpectedCheckStatus(FleetlabError):
    """A check's status differs from ``$FLEETLAB_EXPECT_CHECKS`` (a CI run of the notebooks)."""


def check(check_id: str, answer: Any) -> CheckResult:
    """Run the public cases of ``check_id`` on ``answer``; record, display and return the result.

    In a graded kernel (``FLEETLAB_GRADED=1``) no case runs: the answer is
    remembered and the result says "graded by the grader".
    """
    exercise = registry.get_check(check_id)
    _answers[check_id] = answer
    if settings().graded:
        result = CheckResult(exercise.id, exercise.title, CheckStatus.NOT_YET, None, exercise.points,
                             GRADED_ELSEWHERE, [], exercise.hidden_cases, exercise.scoring())
        show(result)
        return result
    result = judge_answer(exercise, answer)
    _save_progress(result)
    show(result)
    _enforce_expectation(result)
    return result


def hand_in(path: str | Path, names: Mapping[str, str]) -> None:
    """Write to ``path`` (JSON) the answer to each check of ``names`` (check id -> answer name), for the judge.

    An answer is found as ``grade`` always found it (``_answer_to``); one not
    found is left out (the judge says "not attempted"). Each is serialised by
    value with cloudpickle, so functions defined in the notebook travel with
    what they use: ``{"pickle": base64}``, with ``"shortcut"`` naming the
    implementing functions the cells that build an answer that is data call
    (``shortcuts.called_in_cells``). An unfinished answer travels as
    ``...``. One that cannot be serialised (it holds an open client, a lock,
    the ``lab``) travels as ``{"unpicklable": diagnosis}``.
    """
    namespace = _notebook_namespace()
    answers = {}
    for check_id, name in names.items():
        found, answer = _answer_to(check_id, name, namespace)
        if found:
            answers[check_id] = _packed(name or check_id, answer)
            if taken := _shortcuts_in_cells(check_id, namespace):
                answers[check_id]["shortcut"] = ", ".join(taken)
    write_atomically(Path(path), json.dumps({"answers": answers}))


def judge_answer(check: registry.Check, answer: Any, **run: Any) -> CheckResult:
    """``run_check``, unless the answer is taken from the instructor's package or is the library's own
    answer to the exercise, or is data the notebook's cells built by calling it: then it scores nothing,
    and says why."""
    if borrowed := learner.borrowed_answer(answer, check.id):
        return refused_borrowed(check, borrowed, graded=run.get("include_hidden", False))
    if taken := shortcuts.called_in_cells(check, _notebook_namespace()):
        return shortcuts.refused_shortcut(check, taken, graded=run.get("include_hidden", False))
    return run_check(check, answer, **run)


def refused_borrowed(check: registry.Check, borrowed: str, *, graded: bool) -> CheckResult:
    """The verdict on an answer that uses ``borrowed`` (see ``learner.borrowed_answer``): nothing scored."""
    return refused(check, f"this answer uses {borrowed}: a check grades your own answer, so it scores "
                          "nothing; write it yourself", graded=graded)


def _notebook_namespace() -> dict[str, Any]:
    """The running notebook's global names (empty outside IPython)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    shell = get_ipython()
    return shell.user_ns if shell is not None else {}


def _shortcuts_in_cells(check_id: str, namespace: dict[str, Any]) -> list[str]:
    """``shortcuts.called_in_cells`` for ``check_id``; none for a check this kernel does not know."""
    try:
        return shortcuts.called_in_cells(registry.get_check(check_id), namespace)
    except InvalidInput:
        return []


def _answer_to(check_id: str, name: str, namespace: dict[str, Any]) -> tuple[bool, Any]:
    """``(True, answer)`` found by the check's answer ``name``, else given to ``check()``; ``(False, None)`` if neither."""
    if name and name in namespace:
        return True, namespace[name]
    if check_id in _answers:
        return True, _answers[check_id]
    return False, None


def _packed(name: str, answer: Any) -> dict[str, str]:
    """``answer`` serialised for the judge, or why it cannot be."""
    if learner.is_unfinished(answer):
        answer = ...
    try:
        data = cloudpickle.dumps(answer)
    except BaseException as exc:  # serialising runs the answer's own hooks: whatever they raise is the answer's
        return {"unpicklable": (
            f"`{name}` could not be handed to the grader ({type(exc).__name__}: {exc}): it holds something that lives "
            "only in this notebook's kernel, such as an open client or the `lab` object; pass what it needs as an "
            "argument instead")}
    return {"pickle": base64.b64encode(data).decode("ascii")}


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
