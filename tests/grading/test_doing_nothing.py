"""No case passes for doing nothing: for every check of labs 00-07, an answer
that raises at once and one that does nothing earn 0 of every case.

A function answer does nothing by returning None without a call; a value
answer (``04.catch``'s block, say) does nothing by being None. Hidden cases
are included, as the grader runs them.
"""

import pytest
from fleetlab_instructor.checks import full_check

from fleetlab.course.grading import registry, run_check
from fleetlab.course.grading.results import CheckStatus

LABS = [f"{n:02d}" for n in range(8)]


def _raises_at_once(*args, **kwargs):
    raise RuntimeError("not written yet")


def _does_nothing(*args, **kwargs):
    return None


def _check_ids():
    return [check.id for lab in LABS for check in registry.checks_of(lab)]


@pytest.fixture(autouse=True)
def moto(monkeypatch):
    monkeypatch.setenv("FLEETLAB_BACKEND", "moto")


def test_every_lab_has_checks_to_hold_to_this():
    assert {check_id.split(".")[0] for check_id in _check_ids()} == set(LABS)


@pytest.mark.parametrize("check_id", _check_ids())
def test_an_answer_that_raises_or_does_nothing_earns_nothing(check_id):
    check = full_check(check_id)
    answers = {"raises at once": _raises_at_once, "does nothing": _does_nothing} if check.function else {
        "None": None}
    for name, answer in answers.items():
        result = run_check(check, answer, include_hidden=True)
        passing = [case.name for case in result.cases if case.status == CheckStatus.PASS]
        assert (result.points, passing) == (0.0, []), f"{check_id}, an answer that {name}"
