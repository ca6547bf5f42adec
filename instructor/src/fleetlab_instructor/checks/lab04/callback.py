"""``04.callback``: the hidden steps, the reference worker and both catalogues.

The hidden case runs a failure under another error name, a step longer than
a 4 s heartbeat window, and a failure that comes after TimeoutSeconds, so a
worker fitted to the public steps (a hard-coded error name) does not pass.
The reference beats every third of the heartbeat window while the step runs, then answers and
drops a dead token's refusal.
"""

from __future__ import annotations

import json
import threading
import time

from botocore.exceptions import ClientError

from fleetlab.core.errors import StepFailed
from fleetlab.course.checks.lab04.callback import QUICK_HEARTBEAT, STEP_OUTPUT, Step, Steps
from fleetlab.course.experiments.callback import answers, fails
from fleetlab.services.stepfunctions import callbacks
from fleetlab.services.stepfunctions.worker import DEAD_TOKEN_ERRORS
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Steps("a failure named ToolTimeout, a 6 s step under HeartbeatSeconds 4, a failure after TimeoutSeconds 2", (
        Step("failure", fails("ToolTimeout", "search took too long", after=0.1), 5, QUICK_HEARTBEAT),
        Step("long step", answers(STEP_OUTPUT, after=6.0), 10, 4),
        Step("late failure", fails("AgentFailed", "gave up", after=2.2), 2, 1, late=True),
    )),
)

DEAD = tuple(sorted(DEAD_TOKEN_ERRORS))


def _answer(sfn, token, output, failure):
    if failure is None:
        sfn.send_task_success(taskToken=token, output=json.dumps(output))
    else:
        sfn.send_task_failure(taskToken=token, error=failure.error, cause=failure.cause)


def _run(work):
    try:
        return work(), None
    except StepFailed as failed:
        return None, failed


def reference_worker(sfn, token, work, heartbeat_seconds, clock):
    """Beats every third of ``heartbeat_seconds`` while ``work`` runs, then answers; a dead token is dropped."""
    with clock.every(heartbeat_seconds / 3, lambda: _beat_quietly(sfn, token)):
        output, failure = _run(work)
    try:
        _answer(sfn, token, output, failure)
    except ClientError as refused:
        if refused.response["Error"]["Code"] not in DEAD:
            raise
        return "dropped"
    return "failed" if failure else "succeeded"


def with_exception_classes(sfn, token, work, heartbeat_seconds, clock):
    """Right: catches boto3's modelled exceptions instead of reading the error code."""
    with clock.every(heartbeat_seconds / 4, lambda: _beat_quietly(sfn, token)):
        output, failure = _run(work)
    try:
        _answer(sfn, token, output, failure)
    except (sfn.exceptions.TaskTimedOut, sfn.exceptions.InvalidToken, sfn.exceptions.TaskDoesNotExist):
        return "dropped"
    return "answered"


def with_own_thread(sfn, token, work, heartbeat_seconds, clock):
    """Right: a plain thread and an Event for the heartbeat, beating every half window."""
    stop = threading.Event()

    def beat():
        while not stop.wait(heartbeat_seconds / 2):
            _beat_quietly(sfn, token)

    beater = threading.Thread(target=beat, daemon=True)
    beater.start()
    try:
        output, failure = _run(work)
    finally:
        stop.set()
        beater.join()
    try:
        _answer(sfn, token, output, failure)
    except ClientError as refused:
        if refused.response["Error"]["Code"] not in DEAD:
            raise


def with_library_helpers(sfn, token, work, heartbeat_seconds, clock):
    """Right: fleetlab's callback helpers, which return a result instead of raising."""
    with clock.every(heartbeat_seconds / 3, lambda: callbacks.send_heartbeat(sfn, token)):
        output, failure = _run(work)
    if failure is None:
        result = callbacks.send_success(sfn, token, output)
    else:
        result = callbacks.send_failure(sfn, token, failure.error, failure.cause)
    return result.accepted


def _beat_quietly(sfn, token):
    try:
        sfn.send_task_heartbeat(taskToken=token)
    except ClientError:
        pass


def never_beats(sfn, token, work, heartbeat_seconds, clock):
    output, failure = _run(work)
    try:
        _answer(sfn, token, output, failure)
    except ClientError:
        pass


def beats_every_window(sfn, token, work, heartbeat_seconds, clock):
    with clock.every(heartbeat_seconds, lambda: _beat_quietly(sfn, token)):
        output, failure = _run(work)
    try:
        _answer(sfn, token, output, failure)
    except ClientError:
        pass


def retries_until_accepted(sfn, token, work, heartbeat_seconds, clock):
    with clock.every(heartbeat_seconds / 3, lambda: _beat_quietly(sfn, token)):
        output, failure = _run(work)
    for _ in range(5):
        try:
            _answer(sfn, token, output, failure)
            return
        except ClientError:
            clock.sleep(0.1)


def lets_refusals_escape(sfn, token, work, heartbeat_seconds, clock):
    with clock.every(heartbeat_seconds / 3, lambda: _beat_quietly(sfn, token)):
        output, failure = _run(work)
    _answer(sfn, token, output, failure)


def generic_error_name(sfn, token, work, heartbeat_seconds, clock):
    with clock.every(heartbeat_seconds / 3, lambda: _beat_quietly(sfn, token)):
        try:
            output = work()
        except StepFailed as failed:
            _quietly(sfn.send_task_failure, taskToken=token, error="Error", cause=str(failed))
            return
    _quietly(sfn.send_task_success, taskToken=token, output=json.dumps(output))


def failure_as_success(sfn, token, work, heartbeat_seconds, clock):
    with clock.every(heartbeat_seconds / 3, lambda: _beat_quietly(sfn, token)):
        try:
            output = work()
        except StepFailed as failed:
            output = {"error": failed.error}
    _quietly(sfn.send_task_success, taskToken=token, output=json.dumps(output))


def output_as_text(sfn, token, work, heartbeat_seconds, clock):
    with clock.every(heartbeat_seconds / 3, lambda: _beat_quietly(sfn, token)):
        output, failure = _run(work)
    if failure is None:
        _quietly(sfn.send_task_success, taskToken=token, output=json.dumps(str(output)))
    else:
        _quietly(sfn.send_task_failure, taskToken=token, error=failure.error, cause=failure.cause)


def heartbeat_outlives_the_step(sfn, token, work, heartbeat_seconds, clock):
    finished = []

    def beat_for_a_while():  # never told to stop; it gives up on its own a second after the step
        while not finished or time.monotonic() < finished[0] + 1:
            try:
                sfn.send_task_heartbeat(taskToken=token)
            except Exception:  # in-process moto can raise its own AttributeError while another execution starts
                pass
            time.sleep(heartbeat_seconds / 3)

    threading.Thread(target=beat_for_a_while, daemon=True).start()
    output, failure = _run(work)
    finished.append(time.monotonic())
    try:
        _answer(sfn, token, output, failure)
    except ClientError:
        pass


def hard_coded_error_name(sfn, token, work, heartbeat_seconds, clock):
    with clock.every(heartbeat_seconds / 3, lambda: _beat_quietly(sfn, token)):
        output, failure = _run(work)
    if failure is None:
        _quietly(sfn.send_task_success, taskToken=token, output=json.dumps(output))
    else:
        _quietly(sfn.send_task_failure, taskToken=token, error="AgentFailed", cause=failure.cause)


def _quietly(call, **kwargs):
    try:
        call(**kwargs)
    except ClientError:
        pass


RIGHT_ANSWERS = (
    RightAnswer("boto3's modelled exceptions", with_exception_classes),
    RightAnswer("a thread and an Event for the heartbeat", with_own_thread),
    RightAnswer("fleetlab's callback helpers", with_library_helpers),
)


def the_librarys_worker(sfn, token, work, heartbeat_seconds, clock):
    from fleetlab.services.stepfunctions.worker import answer_task

    return answer_task(sfn, token, work, heartbeat_seconds, clock)


WRONG_ANSWERS = (
    WrongAnswer("never beats", never_beats, "no SendTaskHeartbeat came", mistake="never-beats"),
    WrongAnswer("beats once per HeartbeatSeconds", beats_every_window, "gaps of up to", mistake="beats-too-seldom"),
    WrongAnswer("retries a refused answer", retries_until_accepted, "answers on one token",
                mistake="answers-a-dead-token-again"),
    WrongAnswer("lets a dead token's refusal escape", lets_refusals_escape, "let the error escape",
                mistake="lets-a-dead-token-refusal-escape"),
    WrongAnswer("fails every step as 'Error'", generic_error_name, "never matched", mistake="not-the-steps-error-name"),
    WrongAnswer("reports a failure as a success", failure_as_success, "but your worker sent SendTaskSuccess",
                mistake="reports-a-failure-as-a-success"),
    WrongAnswer("sends the output as text", output_as_text, "not the step's output",
                mistake="output-not-the-steps-result"),
    WrongAnswer("a heartbeat that outlives its step", heartbeat_outlives_the_step, "kept beating",
                mistake="heartbeat-outlives-the-step"),
    WrongAnswer("a hard-coded error name", hard_coded_error_name, "never matched", public=False,
                mistake="not-the-steps-error-name"),
    WrongAnswer("the library's answer_task", the_librarys_worker,
                "calls `fleetlab.services.stepfunctions.worker.answer_task`"),
)

# The harness sees one mistake in both: the failure went out under a name other than the step's own error.
SHARED_MISTAKES = {"not-the-steps-error-name": "sends a failure under another name than the step's own error"}

SIDE = InstructorSide("04.callback", hidden=HIDDEN, reference=reference_worker,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS, shared_mistakes=SHARED_MISTAKES)
