"""What lab 04's timer checks say when Step Functions would refuse the learner's task: the field as the
task holds it, never its path in the definition."""

import pytest

from fleetlab.course.grading import get_check, run_check


@pytest.fixture(autouse=True)
def moto(monkeypatch):
    monkeypatch.setenv("FLEETLAB_BACKEND", "moto")


def test_a_heartbeat_as_long_as_the_task_is_refused_in_the_task_s_own_words():
    result = run_check(get_check("04.timeouts"), lambda *profile: {"TimeoutSeconds": 600, "HeartbeatSeconds": 600})
    diagnosis = result.cases[0].diagnosis
    assert diagnosis == ("Step Functions would refuse this task: the task's HeartbeatSeconds 600 must be smaller "
                         "than TimeoutSeconds 600 (a heartbeat window as long as the whole task never fires)")


def test_a_retry_step_functions_refuses_is_named_by_its_place_in_the_block():
    block = {"Retry": [{"ErrorEquals": ["States.Timeout"], "IntervalSeconds": -1}],
             "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Recover"}]}
    diagnosis = run_check(get_check("04.catch"), block).cases[0].diagnosis
    assert diagnosis == ("Step Functions would refuse the task with your block: the task's Retry[0].IntervalSeconds: "
                         "must be at least 1, got -1")
