"""Lab 06's checks on moto and moto-server: the reference and every right-but-different answer pass
every case; the lab's central mistakes fail the public cases with their diagnosis; stubs say "not yet"."""

import numpy as np
import pytest

from fleetlab import lab
from fleetlab.grading import registry, run_check
from fleetlab.grading.checks import lab06

CHECK_IDS = sorted(lab06.REFERENCE)
RIGHT = [(check_id, name, answer) for check_id, answers in lab06.RIGHT_ANSWERS.items() for name, answer in answers]
NUMPY = [
    ("06.targets", "numpy booleans", lambda t, age: np.bool_(lab06.reference_targets(t, age))),
    ("06.window", "a numpy float", lambda facts: np.float64(lab06.reference_window(facts))),
    ("06.retry_policy", "numpy integers", lambda goal, alarm, blip, dlq: {
        "RetryPolicy": {"MaximumRetryAttempts": np.int64(185), "MaximumEventAgeInSeconds": np.int64(goal - alarm)},
        "DeadLetterConfig": {"Arn": dlq}}),
]
CENTRAL_MISTAKES = {
    "06.targets": ("every target", "billing-webhook"),
    "06.pattern": ("matches replays too", "the replay reached the webhook"),
    "06.window": ("omits the replay horizon", "ran again"),
    "06.retry_policy": ("the classic 24 h default", "the goal is 5 min"),
}


@pytest.fixture(scope="module", params=["moto", "moto-server"], autouse=True)
def backend_name(request):
    """Checks open the backend named by FLEETLAB_BACKEND on first use; one backend per parameter."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FLEETLAB_BACKEND", request.param)
        lab.shutdown()
        yield request.param
        lab.shutdown()


def graded(check_id, answer, *, hidden=True):
    return run_check(registry.get_check(check_id), answer, include_hidden=hidden)


@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_the_reference_passes_every_public_and_hidden_case(check_id):
    result = graded(check_id, lab06.REFERENCE[check_id])
    assert result.passed, result.diagnosis
    assert len(result.cases) == len(registry.get_check(check_id).public) + len(registry.get_check(check_id).hidden)


@pytest.mark.parametrize(("check_id", "name", "answer"), RIGHT + NUMPY, ids=[f"{c}: {n}" for c, n, _ in RIGHT + NUMPY])
def test_a_right_but_different_answer_passes_every_case(check_id, name, answer):
    result = graded(check_id, answer)
    assert result.passed, f"{name}: {result.diagnosis}"


@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_the_central_mistake_fails_a_public_case_with_its_diagnosis(check_id):
    name, expected = CENTRAL_MISTAKES[check_id]
    wrong = next(w for w in registry.get_check(check_id).wrong_answers if w.name == name)
    result = graded(check_id, wrong.answer, hidden=False)
    assert result.status == "fail" and expected in result.diagnosis


def stub_targets(target, replay_age): ...


def stub_window(facts):
    raise NotImplementedError


@pytest.mark.parametrize(("check_id", "answer"), [("06.targets", stub_targets), ("06.window", stub_window),
                                                  ("06.pattern", ...), ("06.retry_policy", ...)])
def test_an_unfinished_exercise_says_not_yet(check_id, answer):
    assert graded(check_id, answer, hidden=False).status == "not yet"


def window_that_forgets_there_may_be_no_archive(facts):
    facts["archive"]["RetentionDays"]  # a learner who reads the archive before checking it exists
    return lab06.reference_window(facts)


def test_a_learners_own_error_is_reported_as_theirs_by_the_hidden_case_that_triggers_it():
    result = graded("06.window", window_that_forgets_there_may_be_no_archive)
    assert result.status == "fail"
    assert "your code raised TypeError" in result.diagnosis
    assert graded("06.window", window_that_forgets_there_may_be_no_archive, hidden=False).passed


def test_a_target_answer_that_is_not_a_boolean_is_refused_by_name():
    result = graded("06.targets", lambda target, age: "yes", hidden=False)
    assert result.status == "fail" and "return True or False" in result.diagnosis
