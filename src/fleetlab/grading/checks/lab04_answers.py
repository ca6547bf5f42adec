"""Answers to the lab 04 exercises, written as learners write them: the reference, right-but-different
ones and the known wrong ones. ``lab04`` registers them with its checks; the tests run every one."""

from __future__ import annotations

import json
import math
import threading
import time
from typing import Any

from botocore.exceptions import ClientError

from ...stepfunctions import callbacks
from ...errors import StepFailed

DEAD = ("TaskTimedOut", "InvalidToken", "TaskDoesNotExist")

# ------------------------------------------------------------------ 04.callback


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


# ------------------------------------------------------------------ 04.timeouts


def _p(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


def choose_timeouts(steps):
    """The reference: TimeoutSeconds covers the p95 step, HeartbeatSeconds the p99 call, each with a 1.5x margin."""
    totals = [sum(step) for step in steps]
    single_calls = [call for step in steps for call in step]
    heartbeat = math.ceil(_p(single_calls, 0.99) * 1.5)
    timeout = max(math.ceil(_p(totals, 0.95) * 1.5), heartbeat + 1)
    return {"TimeoutSeconds": timeout, "HeartbeatSeconds": heartbeat}


def timeouts_as_tuple(steps):
    """Right: a (timeout, heartbeat) pair, margins of 2x on p95 step and 1.3x on the longest call seen."""
    totals = [sum(step) for step in steps]
    longest_call = max(call for step in steps for call in step)
    heartbeat = math.ceil(longest_call * 1.3)
    return max(math.ceil(_p(totals, 0.95) * 2), heartbeat + 1), heartbeat


def timeouts_in_snake_case(steps):
    """Right: snake_case keys, the p99 step and twice the p99 call."""
    totals = [sum(step) for step in steps]
    single_calls = [call for step in steps for call in step]
    heartbeat = math.ceil(2 * _p(single_calls, 0.99))
    return {"timeout_seconds": max(math.ceil(_p(totals, 0.99) * 1.2), heartbeat + 1), "heartbeat_seconds": heartbeat}


def no_timeout(steps):
    return {"TimeoutSeconds": None, "HeartbeatSeconds": choose_timeouts(steps)["HeartbeatSeconds"]}


def no_heartbeat(steps):
    return {"TimeoutSeconds": choose_timeouts(steps)["TimeoutSeconds"], "HeartbeatSeconds": None}


def timeout_from_median_step(steps):
    reference = choose_timeouts(steps)
    median = math.ceil(_p([sum(step) for step in steps], 0.5))
    return {"TimeoutSeconds": max(median, reference["HeartbeatSeconds"] + 1), "HeartbeatSeconds": reference["HeartbeatSeconds"]}


def heartbeat_from_median_call(steps):
    median = math.ceil(_p([call for step in steps for call in step], 0.5))
    return {"TimeoutSeconds": choose_timeouts(steps)["TimeoutSeconds"], "HeartbeatSeconds": median}


def heartbeat_as_long_as_timeout(steps):
    timeout = choose_timeouts(steps)["TimeoutSeconds"]
    return {"TimeoutSeconds": timeout, "HeartbeatSeconds": timeout}


def a_day_and_half_a_day(steps):
    return {"TimeoutSeconds": 86_400, "HeartbeatSeconds": 43_200}


def fractional_seconds(steps):
    totals = [sum(step) for step in steps]
    single_calls = [call for step in steps for call in step]
    return {"TimeoutSeconds": _p(totals, 0.95) * 1.5 + 0.5, "HeartbeatSeconds": _p(single_calls, 0.99) * 1.5 + 0.5}


# ------------------------------------------------------------------ 04.catch

CATCH_REFERENCE = """{
  "Retry": [{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"],
             "IntervalSeconds": 1, "MaxAttempts": 1, "BackoffRate": 2.0}],
  "Catch": [{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"],
             "ResultPath": "$.error", "Next": "Recover"}]
}"""

CATCH_ONLY = {"Catch": [{"ErrorEquals": ["States.Timeout", "States.HeartbeatTimeout"], "Next": "Recover"}]}
CATCH_ALL = '{"Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Recover"}]}'
ONE_CATCHER_PER_NAME = {"Catch": [{"ErrorEquals": ["States.HeartbeatTimeout"], "Next": "Recover"},
                                  {"ErrorEquals": ["States.Timeout"], "Next": "Recover"}]}
WHOLE_TASK_STATE = json.dumps({
    "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
    "HeartbeatSeconds": 1, "TimeoutSeconds": 3,
    "Catch": [{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"], "Next": "Recover"}],
})

ONLY_HEARTBEAT_NAME = {"Catch": [{"ErrorEquals": ["States.HeartbeatTimeout"], "Next": "Recover"}]}
ONLY_TIMEOUT_NAME = {"Catch": [{"ErrorEquals": ["States.Timeout"], "Next": "Recover"}]}
RETRY_WITHOUT_CATCH = {"Retry": [{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"], "MaxAttempts": 1,
                                  "IntervalSeconds": 1}]}
TASK_FAILED_WILDCARD = {"Catch": [{"ErrorEquals": ["States.TaskFailed"], "Next": "Recover"}]}
MISNAMED_TARGET = {"Catch": [{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"], "Next": "Recovery"}]}
ERROR_NAME_AS_TEXT = '{"Catch": [{"ErrorEquals": "States.Timeout", "Next": "Recover"}]}'
SLOW_RETRIES = {"Retry": [{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"], "IntervalSeconds": 30,
                           "MaxAttempts": 3, "BackoffRate": 2.0}],
                "Catch": [{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"], "Next": "Recover"}]}
ALL_BESIDE_OTHERS = {"Catch": [{"ErrorEquals": ["States.ALL", "States.Timeout"], "Next": "Recover"}]}
NOT_JSON = "{'Catch': [{'ErrorEquals': ['States.Timeout'], 'Next': 'Recover'}]}"


def as_dict(text: str) -> Any:
    """A JSON answer as the dict a learner might pass instead."""
    return json.loads(text)
