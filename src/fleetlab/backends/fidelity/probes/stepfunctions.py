"""Step Functions probes: callback timeouts, late callbacks, retries, stops and large outputs;
unnamed executions; Express's synchronous start.

Step Functions timers run in real time on every backend, so the callback
probe runs its executions side by side: one 1 s heartbeat and one 1 s retry
interval are all it waits.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

import botocore.config
from botocore.exceptions import ClientError

from fleetlab.backends.backend import mute_server_traceback
from fleetlab.backends.fidelity.probes.base import Feature, Observation, Probe, register
from fleetlab.backends.fidelity.probes.scratch import Scratch
from fleetlab.backends.responses import error_code
from fleetlab.core.errors import Timeout

PROBES: list[Probe] = []
"""This service's probes, in the order their findings appear in a table."""

_probes = partial(register, PROBES)

_HEARTBEAT_SECONDS = 1
_TASK_TIMEOUT_SECONDS = 5
_RETRY_INTERVAL_SECONDS = 1
_LARGE_OUTPUT_BYTES = 300_000
_STOP_SETTLE_SECONDS = 2  # AWS ends a stopped execution at once; an emulator that does not, never does
_PARKED_SECONDS = 86_400  # the other executions' timers: they never fire in a probe
_RETRIED_ERROR = "Probe.Retry"


@_probes(
    Feature(
        "stepfunctions.heartbeat_timeout_error",
        "Error a waitForTaskToken task reports when its heartbeat is missed",
        aws="States.HeartbeatTimeout (a Catch on it matches)",
        workaround="catch both States.HeartbeatTimeout and States.Timeout in the same Catch",
    ),
    Feature(
        "stepfunctions.late_task_success",
        "SendTaskSuccess with the token of a task that timed out",
        aws="rejected with TaskTimedOut",
        workaround="treat TaskTimedOut and InvalidToken alike: the token is dead, drop the late result",
    ),
    Feature(
        "stepfunctions.late_task_failure",
        "SendTaskFailure with the token of a task that timed out",
        aws="rejected with TaskTimedOut",
        workaround="never take an accepted SendTaskFailure as proof the task was live; read the execution status",
    ),
    Feature(
        "stepfunctions.retry_task_token",
        "The message a Retry sends after a callback task failed: its task token",
        aws="a fresh token; the failed attempt's token is dead",
        workaround="answer only the token your message carries, once; treat any refusal as final",
    ),
    Feature(
        "stepfunctions.stop_waiting_execution",
        "StopExecution on an execution waiting for a task token",
        aws="the execution ends ABORTED",
        workaround="after StopExecution, answer the open task too (fleetlab's callback bench does when it closes)",
    ),
    Feature(
        "stepfunctions.large_task_output",
        f"SendTaskSuccess with a {_LARGE_OUTPUT_BYTES // 1000} KB output",
        aws="rejected: a task's output is capped at 256 KiB (262,144 bytes)",
        workaround="claim-check outputs over 256 KiB to S3 and answer with the reference (fleetlab's callback worker does)",
    ),
)
def _callback_timeouts(scratch: Scratch) -> tuple[Observation, ...]:
    """Four executions of one callback machine, side by side, so the probe waits one heartbeat in all.

    ``timeout``: no worker beats, the task times out after 1 s; then late
    answers on its dead token. ``retry``: its task is failed with an error
    the Retry matches, and the retry's message is compared and answered.
    ``stop`` is stopped while it waits; ``large`` gets an answer over 256 KiB.
    """
    queue = scratch.queue("tokens")
    sfn = scratch.client("stepfunctions")
    machine = scratch.state_machine("callback", _callback_definition(queue.url))  # one: each create parses ASL
    executions = {
        probe: _start(scratch, machine, probe, heartbeat=heartbeat, timeout=timeout)
        for probe, heartbeat, timeout in (("timeout", _HEARTBEAT_SECONDS, _TASK_TIMEOUT_SECONDS),
                                          ("retry", _PARKED_SECONDS - 1, _PARKED_SECONDS),
                                          ("stop", _PARKED_SECONDS - 1, _PARKED_SECONDS),
                                          ("large", _PARKED_SECONDS - 1, _PARKED_SECONDS))
    }
    tokens: dict[str, list[str]] = {probe: [] for probe in executions}
    scratch.wait_until(lambda: _collect(scratch, queue.url, tokens) and all(tokens.values()), seconds=10,
                       what="the task tokens reaching the queue")
    for probe in ("stop", "large"):  # free the parked tasks at teardown, on emulators that need it
        scratch.on_teardown(f"{probe} task", _quietly, call=sfn.send_task_failure, taskToken=tokens[probe][0],
                            error="Probe")
    sfn.send_task_failure(taskToken=tokens["retry"][0], error=_RETRIED_ERROR, cause="the probe fails attempt 1")
    sfn.stop_execution(executionArn=executions["stop"])
    stopped = _stop_outcome(scratch, executions["stop"])
    large_output = _answer(lambda: sfn.send_task_success(taskToken=tokens["large"][0],
                                                         output=json.dumps({"x": "x" * _LARGE_OUTPUT_BYTES})))
    scratch.wait_until(lambda: _collect(scratch, queue.url, tokens) and len(tokens["retry"]) > 1
                       or not _running(sfn, executions["retry"]),
                       seconds=_RETRY_INTERVAL_SECONDS + 10, what="the retry's task token")
    retry = _retry_token(sfn, tokens["retry"])
    scratch.wait_until(lambda: not _running(sfn, executions["timeout"]), seconds=_TASK_TIMEOUT_SECONDS + 10,
                       what="the callback execution")
    dead = tokens["timeout"][0]
    return (
        _heartbeat_error(sfn.get_execution_history(executionArn=executions["timeout"])["events"]),
        _late_callback(lambda: sfn.send_task_success(taskToken=dead, output="{}")),
        _late_callback(lambda: sfn.send_task_failure(taskToken=dead, error="Probe", cause="late")),
        retry,
        stopped,
        Observation(large_output, large_output.startswith("rejected")),
    )


def _start(scratch: Scratch, machine: str, probe: str, *, heartbeat: int, timeout: int) -> str:
    sfn = scratch.client("stepfunctions")
    execution = sfn.start_execution(stateMachineArn=machine, name=uuid.uuid4().hex, input=json.dumps(
        {"probe": probe, "heartbeat": heartbeat, "timeout": timeout}))["executionArn"]
    scratch.on_teardown(execution, _quietly, call=sfn.stop_execution, executionArn=execution)
    return execution


def _collect(scratch: Scratch, url: str, tokens: dict[str, list[str]]) -> bool:
    """Take every task message waiting on ``url`` into ``tokens`` (by probe); True once done polling."""
    while (message := scratch.receive(url, wait=0)) is not None:
        body = json.loads(message["Body"])
        tokens[body["probe"]].append(body["token"])
        scratch.delete_message(url, message)
    return True


def _running(sfn: Any, execution: str) -> bool:
    return sfn.describe_execution(executionArn=execution)["status"] == "RUNNING"


def _retry_token(sfn: Any, tokens: list[str]) -> Observation:
    if len(tokens) < 2:
        return Observation("no second message: the retry never dispatched the task again", False)
    same = tokens[1] == tokens[0]
    answered = _answer(lambda: sfn.send_task_success(taskToken=tokens[1], output="{}"))
    token = "the same token as the failed attempt" if same else "a fresh token"
    return Observation(f"the retry's message carries {token} (answering it: {answered})", not same)


def _stop_outcome(scratch: Scratch, execution: str) -> Observation:
    """What StopExecution did, read within seconds of it (AWS ends the execution at once): the probe's later
    waits let moto's virtual clock jump ahead, and a parked task's day-long timers would then fail it."""
    sfn = scratch.client("stepfunctions")
    with contextlib.suppress(Timeout):
        scratch.wait_until(lambda: not _running(sfn, execution), seconds=_STOP_SETTLE_SECONDS,
                           what="the stopped execution to end")
    status = sfn.describe_execution(executionArn=execution)["status"]
    if status == "RUNNING":
        return Observation("stays RUNNING until its task is answered", False)
    return Observation(f"ends {status}", status == "ABORTED")


def _answer(call: Callable[[], Any]) -> str:
    try:
        call()
    except ClientError as exc:
        return f"rejected with {error_code(exc)}"
    return "accepted"


def _quietly(call: Callable[..., Any], **kwargs: Any) -> None:
    """A teardown step that may find its execution or task already gone."""
    try:
        call(**kwargs)
    except ClientError:
        pass


def _callback_definition(queue_url: str) -> dict[str, Any]:
    """A callback task whose timers come from the input (1 s for the one that times out, a day for the
    others), retried once on the probe's own error."""
    return {
        "StartAt": "Wait for callback",
        "States": {
            "Wait for callback": {
                "Type": "Task",
                "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {"QueueUrl": queue_url,
                               "MessageBody": {"probe.$": "$.probe", "token.$": "$$.Task.Token"}},
                "HeartbeatSecondsPath": "$.heartbeat",
                "TimeoutSecondsPath": "$.timeout",
                "Retry": [{"ErrorEquals": [_RETRIED_ERROR], "IntervalSeconds": _RETRY_INTERVAL_SECONDS,
                           "MaxAttempts": 1}],
                "End": True,
            }
        },
    }


def _heartbeat_error(history: list[dict[str, Any]]) -> Observation:
    details = ("taskTimedOutEventDetails", "executionFailedEventDetails")
    errors = [event[key]["error"] for event in history for key in details if key in event]
    if not errors:
        kinds = ", ".join(event["type"] for event in history)
        return Observation(f"no timeout error in the history ({kinds})", False)
    return Observation(f"the task fails with {errors[0]}", errors[0] == "States.HeartbeatTimeout")


def _late_callback(call: Callable[[], Any]) -> Observation:
    outcome = _answer(call)
    observed = "accepted silently" if outcome == "accepted" else outcome
    return Observation(observed, outcome == "rejected with TaskTimedOut")


@_probes(
    Feature(
        "stepfunctions.unnamed_execution",
        "StartExecution without a name, twice",
        aws="each execution gets a generated unique name",
        workaround="always pass name=uuid4().hex to StartExecution (fleetlab does)",
    )
)
def _unnamed_execution(scratch: Scratch) -> Observation:
    definition = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}
    machine = scratch.state_machine("unnamed", definition)
    sfn = scratch.client("stepfunctions")
    names: list[str] = []
    for start in (1, 2):  # distinct inputs: a repeated name is then an error, never idempotent reuse
        try:
            started = sfn.start_execution(stateMachineArn=machine, input=json.dumps({"start": start}))
        except ClientError as exc:
            if not names:
                return Observation(f"rejected: {error_code(exc)}", False)
            second = f"the second start fails: {error_code(exc)}"
            return Observation(f'the first is named "{names[0]}"; {second}', False)
        names.append(started["executionArn"].rsplit(":", 1)[-1])  # an execution ARN ends with its name
    if names[0] == names[1] or "None" in names:
        return Observation(f"named {names[0]!r} and {names[1]!r}", False)
    return Observation("two distinct generated names", True)


@_probes(
    Feature(
        "stepfunctions.start_sync_execution",
        "StartSyncExecution on an Express state machine",
        aws="runs the execution and returns its output in the response",
        workaround="size Express with arithmetic and a Standard run (lab 04 does)",
    )
)
def _sync_express(scratch: Scratch) -> Observation:
    # StartSyncExecution goes to a "sync-" host; an emulator on one endpoint serves it there, unprefixed.
    config = botocore.config.Config(retries={"total_max_attempts": 1}, inject_host_prefix=not scratch.backend.is_emulated)
    sfn = scratch.backend.make_client("stepfunctions", config)
    definition = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}
    machine = sfn.create_state_machine(name=scratch.name("express"), definition=json.dumps(definition), type="EXPRESS",
                                       roleArn=f"arn:aws:iam::{scratch.account}:role/fleetlab-probe")["stateMachineArn"]
    scratch.on_teardown(machine, sfn.delete_state_machine, stateMachineArn=machine)
    mute_server_traceback("start_sync_execution")
    try:
        answer = sfn.start_sync_execution(stateMachineArn=machine, input=json.dumps({"probe": 1}))
    except ClientError as exc:
        return Observation(_refusal(exc), False)
    except NotImplementedError:  # in-process moto raises it for calls it does not emulate
        return Observation("not implemented: the call raises Python NotImplementedError", False)
    returned = json.loads(answer.get("output") or "null")
    return Observation(f"{answer['status']}, output {returned}", answer["status"] == "SUCCEEDED" and returned == {"probe": 1})


def _refusal(exc: ClientError) -> str:
    """A refused call in a few words; an HTTP status for a code means the emulator lacks the call."""
    code, message = error_code(exc), exc.response["Error"].get("Message", "")
    if not code.isdigit():
        return f"refused: {code}"
    if message and "<" not in message:
        return f"not implemented: {code} {message}"
    return f"not implemented: the server answers HTTP {code}"
