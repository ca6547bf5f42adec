"""Every check is provably right, on moto and on moto-server.

Each check's instructor's side (``fleetlab_instructor.checks``) holds its
hidden cases, a reference answer, right-but-different answers and known
wrong answers. The reference and each right answer pass every public
and hidden case. Each wrong answer is rejected: by the public cases (with
the diagnosis a learner sees in the notebook) when it is marked public, else
only by the hidden cases. The fixture lab's checks are held to the same rules.
"""

import pytest

from fleetlab.course import lab
from fleetlab.course.grading import registry, run_check
from fleetlab.course.grading.results import CheckStatus
from fleetlab_instructor.checks import full_check, side_of

from .conftest import load_fixture_checks

BACKENDS = ["moto", "moto-server"]


def _fixture_lab_checks():
    with registry.isolated():
        load_fixture_checks()
        return [(full_check(check.id), side_of(check.id)) for check in registry.checks_of("99")]


SHIPPED = [(full_check(check.id), side_of(check.id))
           for lab_id in registry.shipped_labs() for check in registry.checks_of(lab_id)]
SIDES = SHIPPED + _fixture_lab_checks()
CHECKS = [check for check, _ in SIDES]
RIGHT = [(check, right) for check, side in SIDES for right in side.right_answers]
WRONG = [(check, wrong) for check, side in SIDES for wrong in side.wrong_answers]


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request):
    """The backend a check opens on first use (``$FLEETLAB_BACKEND``), one at a time."""
    with pytest.MonkeyPatch.context() as patch:
        lab.shutdown()
        patch.setenv("FLEETLAB_BACKEND", request.param)
        yield request.param
        lab.shutdown()


@pytest.mark.parametrize(("check", "side"), SIDES, ids=[check.id for check, _ in SIDES])
def test_every_check_has_a_reference_both_catalogues_and_hidden_cases(check, side):
    assert side.reference is not None, f"{check.id} has no reference answer"
    assert side.right_answers, f"{check.id} lists no right-but-different answers"
    assert side.wrong_answers, f"{check.id} lists no known wrong answers"
    assert any(wrong.public for wrong in side.wrong_answers), f"{check.id}: no public case catches a known mistake"
    assert check.hidden, f"{check.id} has no hidden cases"


@pytest.mark.parametrize(("check", "side"), SIDES, ids=[check.id for check, _ in SIDES])
def test_the_reference_passes_every_case(check, side, backend):
    graded = run_check(check, side.reference, include_hidden=True)
    assert (graded.status, graded.points) == (CheckStatus.PASS, check.points), graded.diagnosis


@pytest.mark.parametrize(("check", "right"), RIGHT, ids=[f"{c.id}: {r.name}" for c, r in RIGHT])
def test_each_right_but_different_answer_passes_every_case(check, right, backend):
    graded = run_check(check, right.answer, include_hidden=True)
    assert (graded.status, graded.points) == (CheckStatus.PASS, check.points), graded.diagnosis


@pytest.mark.parametrize(("check", "wrong"), WRONG, ids=[f"{c.id}: {w.name}" for c, w in WRONG])
def test_each_known_wrong_answer_is_rejected_with_its_diagnosis(check, wrong, backend):
    in_notebook = run_check(check, wrong.answer)
    if wrong.public:
        assert in_notebook.status == CheckStatus.FAIL, f"the public cases let it through: {in_notebook.diagnosis}"
        assert wrong.expect in in_notebook.diagnosis, "the learner would not see the expected diagnosis"
        return
    assert in_notebook.status == CheckStatus.PUBLIC_PASS, "public=False means only hidden cases catch it"
    graded = run_check(check, wrong.answer, include_hidden=True)
    assert graded.status == CheckStatus.FAIL and graded.points < check.points
    failing_hidden = [case for case in graded.cases if case.hidden and case.status == CheckStatus.FAIL]
    assert any(wrong.expect in case.diagnosis for case in failing_hidden), [c.diagnosis for c in failing_hidden]
