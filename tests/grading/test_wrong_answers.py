"""Every check rejects every known wrong answer of its exercise, in the learner's terms."""

import sys

import pytest

from fleetlab.grading import registry, run_check
from fleetlab.grading.checks import lab00

from .answers import good_handle, good_visibility
from .conftest import FIXTURES

REFERENCE = {
    "00.planes": lab00.REFERENCE,
    "99.visibility": good_visibility,
    "99.dedupe": good_handle,
}


def fixture_checks():
    sys.path.insert(0, str(FIXTURES))
    try:
        import fixture_checks  # noqa: F401 - registers lab 99
    finally:
        sys.path.remove(str(FIXTURES))
    return registry.checks_of("99")


SHIPPED = [check for lab in registry.shipped_labs() for check in registry.checks_of(lab)]
CHECKS = SHIPPED + fixture_checks()
WRONG = [(check, wrong) for check in CHECKS for wrong in check.wrong_answers]


@pytest.mark.parametrize("check", SHIPPED, ids=lambda check: check.id)
def test_every_shipped_check_lists_wrong_answers_and_has_hidden_cases(check):
    assert check.wrong_answers, f"{check.id} lists no known wrong answers"
    assert check.hidden, f"{check.id} has no hidden cases"


@pytest.mark.parametrize("check", [c for c in CHECKS if c.id in REFERENCE], ids=lambda check: check.id)
def test_the_reference_answer_passes_every_case(check):
    result = run_check(check, REFERENCE[check.id], include_hidden=True)
    assert result.passed, result.diagnosis


@pytest.mark.parametrize(("check", "wrong"), WRONG, ids=[f"{c.id}: {w.name}" for c, w in WRONG])
def test_each_known_wrong_answer_is_rejected_with_its_diagnosis(check, wrong):
    graded = run_check(check, wrong.answer, include_hidden=True)
    assert graded.status == "fail"
    assert graded.points == 0
    assert wrong.expect in graded.diagnosis
    in_notebook = run_check(check, wrong.answer)
    assert in_notebook.passed is not wrong.public, "public=True means the public cases alone reject it"


@pytest.mark.parametrize("answer", [..., {name: ... for name in lab00.REFERENCE}])
def test_an_unfinished_planes_answer_says_not_yet(answer):
    assert run_check(registry.get_check("00.planes"), answer).status == "not yet"


def planes_stub():
    raise NotImplementedError


def test_planes_takes_a_function_returning_the_dict_and_a_stub_says_not_yet():
    planes = registry.get_check("00.planes")
    assert run_check(planes, lambda: dict(lab00.REFERENCE), include_hidden=True).passed
    assert run_check(planes, planes_stub).status == "not yet"


def test_planes_reads_keys_and_planes_loosely():
    loose = {key.upper() + " ": f"{plane.title()} plane" for key, plane in lab00.REFERENCE.items()}
    assert run_check(registry.get_check("00.planes"), loose, include_hidden=True).passed
