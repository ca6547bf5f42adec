"""Step Functions probes: callback timeouts and late callbacks, unnamed executions.

Step Functions timers run in real time on every backend, so the callback
probe uses a 1 s heartbeat.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from .base import Feature, Observation, Probe, register
from ...aws.responses import error_code
from .scratch import Scratch

PROBES: list[Probe] = []
"""This service's probes, in the order their findings appear in a table."""

_probes = partial(register, PROBES)

_HEARTBEAT_SECONDS = 1
_TASK_TIMEOUT_SECONDS = 5


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
)
def _callback_timeouts(scratch: Scratch) -> tuple[Observation, ...]:
    queue = scratch.queue("tokens")
    machine = scratch.state_machine("callback", _callback_definition(queue.url))
    sfn = scratch.client("stepfunctions")
    execution = sfn.start_execution(stateMachineArn=machine, name=uuid.uuid4().hex, input="{}")["executionArn"]
    scratch.on_teardown(execution, sfn.stop_execution, executionArn=execution)
    message = scratch.receive(queue.url, wait=10)
    if message is None:
        raise RuntimeError("the task token never reached the queue within 10 s")
    token = json.loads(message["Body"])["token"]
    scratch.wait_until(
        lambda: sfn.describe_execution(executionArn=execution)["status"] != "RUNNING",
        seconds=_TASK_TIMEOUT_SECONDS + 10,
        what="the callback execution",
    )
    return (
        _heartbeat_error(sfn.get_execution_history(executionArn=execution)["events"]),
        _late_callback(lambda: sfn.send_task_success(taskToken=token, output="{}")),
        _late_callback(lambda: sfn.send_task_failure(taskToken=token, error="Probe", cause="late")),
    )


def _callback_definition(queue_url: str) -> dict[str, Any]:
    return {
        "StartAt": "Wait for callback",
        "States": {
            "Wait for callback": {
                "Type": "Task",
                "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {"QueueUrl": queue_url, "MessageBody": {"token.$": "$$.Task.Token"}},
                "HeartbeatSeconds": _HEARTBEAT_SECONDS,
                "TimeoutSeconds": _TASK_TIMEOUT_SECONDS,
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
    try:
        call()
    except ClientError as exc:
        code = error_code(exc)
        return Observation(f"rejected with {code}", code == "TaskTimedOut")
    return Observation("accepted silently", False)


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
