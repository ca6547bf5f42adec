"""``04.callback`` tells a busy machine from a wrong answer: a task handed to the worker only after its timer ran
out is run again, and then reported as the machine's doing, never as the answer's missing heartbeat."""

import json
import time

from fleetlab_instructor.checks import full_check, side_of

from fleetlab.course.grading import run_check
from fleetlab.course.grading.results import CheckStatus
from fleetlab.services.stepfunctions.worker import CallbackWorker

HANDED_LATE = 3.5  # seconds the harness holds each task before the answer gets it: past the quick steps' window


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


def a_timed_out_quick_step(answer_after: float) -> tuple:
    """The public case's quick answer, timed out: beats every 0.3 s from getting the task, answers ``answer_after`` later."""
    from fleetlab.course.checks.lab04 import callback
    from fleetlab.course.experiments.callback import CallbackRun
    from fleetlab.services.stepfunctions.executions import HistoryRow
    from fleetlab.services.stepfunctions.worker import Call

    step = next(s for s in full_check("04.callback").public[0].steps if s.name == "quick answer")
    beats = [Call(at, "worker-1", "SendTaskHeartbeat", "t", True) for at in (0.3 * n for n in range(1, 40))
             if at < answer_after]
    watch = callback._Watch(calls=[*beats, Call(answer_after, "worker-1", "SendTaskSuccess", "t", False)],
                            started={"t": 0.0}, returned={"t": answer_after})
    run = CallbackRun("quick", "arn", (step.behaviour,), status="FAILED", tokens=["t"],
                      history=[HistoryRow(1, 0.0, "ExecutionTimedOut", "States.Timeout: the task's timer")])
    return callback._judge_step(step, run, watch)


def test_a_timer_that_ran_out_on_an_answer_sent_in_time_is_the_machines_doing_one_sent_late_the_answers():
    assert "this machine was too busy" in a_timed_out_quick_step(answer_after=0.1)
    late = a_timed_out_quick_step(answer_after=6.0)  # past the quick step's TimeoutSeconds 5, beating all along
    assert late == "the quick answer: the execution ended FAILED (States.Timeout); it should succeed"


def a_succeeded_step(name: str, *, working: float, beats: tuple[float, ...], answered: float) -> str:
    """The public case's step ``name``, succeeded: handed at 0, the worker called ``work`` at ``working``, beat
    at ``beats`` and answered at ``answered``; what the check says of it."""
    from fleetlab.course.checks.lab04 import callback
    from fleetlab.course.experiments.callback import CallbackRun
    from fleetlab.services.stepfunctions.worker import Call

    step = next(s for s in full_check("04.callback").public[0].steps if s.name == name)
    calls = [*(Call(at, "worker-1", "SendTaskHeartbeat", "t", True) for at in beats),
             Call(answered, "worker-1", "SendTaskSuccess", "t", True)]
    watch = callback._Watch(calls=calls, started={"t": 0.0}, working={"t": working}, returned={"t": answered})
    run = CallbackRun(name, "arn", (step.behaviour,), status="SUCCEEDED", tokens=["t"],
                      output={"result": step.behaviour.output})
    return callback._judge_step(step, run, watch)


def test_the_heartbeat_window_counts_from_the_workers_first_act_not_from_the_machines_delay_before_it():
    # a graded answer reached its first line 2.5 s after the task was handed (its process was slow to get
    # there), then worked 0.1 s and answered: no beat was due in the quick step's 3 s window, and none is asked for
    assert a_succeeded_step("quick answer", working=2.5, beats=(), answered=2.61) == ""
    # the same delay before a 5.6 s step that never beats: the gap is the answer's own
    silent = a_succeeded_step("long step", working=0.85, beats=(), answered=6.46)
    assert "no SendTaskHeartbeat came" in silent
    # one beat before the work and none during it: a timer handed beat()'s result, not beat
    once = a_succeeded_step("long step", working=0.9, beats=(0.5,), answered=6.51)
    assert "your worker beat once, before the work began, and never during it" in once
    assert "takes the function itself and calls it each interval: pass beat, not beat()" in once
    assert "every third" not in once
    # two beats early in the work leave a gap the old way
    assert "gaps of up to 5.01 s" in a_succeeded_step("long step", working=0.9, beats=(0.5, 1.5), answered=6.51)


def test_beats_refused_because_the_timer_ran_out_before_the_worker_had_the_task_are_the_machines_doing():
    """The long step's timer started before the worker was handed it and ran out: the beats, every third of its
    4 s window from the first act, were refused (moto answers InvalidToken once the execution has ended), and so
    was the answer."""
    from fleetlab.course.checks.lab04 import callback
    from fleetlab.course.experiments.callback import CallbackRun
    from fleetlab.services.stepfunctions.executions import HistoryRow
    from fleetlab.services.stepfunctions.worker import Call

    step = next(s for s in full_check("04.callback").public[0].steps if s.name == "long step")

    def judged(beats: tuple[float, ...], code: str, *, ran_out: float) -> str:
        calls = [*(Call(at, "worker-1", "SendTaskHeartbeat", "t", False, code) for at in beats),
                 Call(5.72, "worker-1", "SendTaskSuccess", "t", False, code)]
        watch = callback._Watch(calls=calls, started={"t": 0.0}, working={"t": 0.1}, returned={"t": 5.72})
        run = CallbackRun("long", "arn", (step.behaviour,), status="FAILED", tokens=["t"],
                          history=[HistoryRow(1, ran_out, "ExecutionFailed", "States.Timeout: the task's timer")])
        return callback._judge_step(step, run, watch)

    every_third = (1.44, 2.78, 4.12, 5.46)
    assert "this machine was too busy" in judged(every_third, "InvalidToken", ran_out=0.0)
    assert "this machine was too busy" in judged(every_third, "TaskTimedOut", ran_out=1.6)  # one raced it
    # a worker that beat once a window is still told so, however its beats were refused
    assert "gaps of up to 4.00 s" in judged((4.1,), "InvalidToken", ran_out=0.0)
    # beats refused before the timer ran out (a token the worker mangled) are no beats
    assert "gaps of up to 4.02 s" in judged(every_third, "InvalidToken", ran_out=4.0)


def test_a_heartbeat_timer_handed_the_result_of_a_call_is_refused_with_the_fix():
    def handed_none(sfn, token, work, heartbeat_seconds, clock):
        def beat():
            sfn.send_task_heartbeat(taskToken=token)

        with clock.every(heartbeat_seconds / 3, beat()):
            output = work()
        sfn.send_task_success(taskToken=token, output=json.dumps(output))

    result = run_check(full_check("04.callback"), handed_none)
    assert result.status == CheckStatus.FAIL
    assert "takes the function to call each interval, and was handed None: pass the function itself (beat, " \
           "not beat()" in result.cases[0].diagnosis
