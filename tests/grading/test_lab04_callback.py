"""``04.callback`` tells a busy machine from a wrong answer: a task handed to the worker only after its timer ran
out is run again, and then reported as the machine's doing, never as the answer's missing heartbeat."""

import time

from fleetlab_instructor.checks import full_check, side_of

from fleetlab.course.grading import run_check
from fleetlab.course.grading.results import CheckStatus
from fleetlab.services.stepfunctions.worker import CallbackWorker

HANDED_LATE = 1.5  # seconds the harness holds each task before the answer gets it: past HeartbeatSeconds 1


def test_a_task_handed_over_after_its_timer_ran_out_is_the_machines_doing_not_the_answers(monkeypatch):
    handle, handed = CallbackWorker.handle, []

    def handed_late(worker, task, step):
        handed.append(task.token)
        time.sleep(HANDED_LATE)  # a fault injected in the harness (a busy machine), not a wait for anything
        return handle(worker, task, step)

    monkeypatch.setattr(CallbackWorker, "handle", handed_late)
    graded = run_check(full_check("04.callback"), side_of("04.callback").reference)
    assert graded.status == CheckStatus.FAIL
    assert "the quick answer: its task's timer ran out before your worker was handed the task" in graded.diagnosis
    assert "this machine was too busy; run the check again" in graded.diagnosis
    assert "heartbeat" not in graded.diagnosis.split("HeartbeatSeconds")[0]  # no word of the answer's heartbeat
    assert len(handed) >= 4  # the case's four steps, each handed over late
