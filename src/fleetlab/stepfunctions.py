"""Step Functions: the orchestrator definition, ASL validation, executions and callbacks.

The orchestrator dispatches one agent step through the bus with
``events:putEvents.waitForTaskToken``: the execution pauses, the event carries
the task token to a worker through rule and queue, and the worker closes the
loop with ``SendTaskSuccess``. The state machine holds the workflow's
position, never its payload: a step reaches it by ``payload_ref`` only.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from . import envelope
from .errors import AslError, FleetlabError

DISPATCH_STATE = "DispatchStep"
STATE_TYPES = {"Task", "Pass", "Choice", "Wait", "Succeed", "Fail", "Parallel", "Map"}
TERMINAL_TYPES = {"Choice", "Succeed", "Fail"}


def emulator_role_arn(account_id: str) -> str:
    """An execution role ARN for emulators, which accept any role but act in the role's account."""
    return f"arn:aws:iam::{account_id}:role/fleetlab-orchestrator"


def orchestrator_definition(*, bus_name: str, timeout_seconds: int, heartbeat_seconds: int) -> dict[str, Any]:
    """ASL for the one-step orchestrator; its input is an envelope detail with ``payload_ref``."""
    detail = {
        "schema_version": envelope.SCHEMA_VERSION,
        "trace_id.$": "$.trace_id",
        "conversation_id.$": "$.conversation_id",
        "step.$": "$.step",
        "agent_class.$": "$.agent_class",
        "payload_ref.$": "$.payload_ref",
        "task_token.$": "$$.Task.Token",
    }
    definition = {
        "Comment": "Dispatch one agent step through the bus and wait for the worker's callback",
        "StartAt": DISPATCH_STATE,
        "States": {
            DISPATCH_STATE: {
                "Type": "Task",
                "Resource": "arn:aws:states:::events:putEvents.waitForTaskToken",
                "Parameters": {
                    "Entries": [
                        {
                            "EventBusName": bus_name,
                            "Source": envelope.SOURCE,
                            "DetailType": envelope.REQUESTED,
                            "Detail": detail,
                        }
                    ]
                },
                "TimeoutSeconds": timeout_seconds,
                "HeartbeatSeconds": heartbeat_seconds,
                "ResultPath": "$.result",
                "End": True,
            }
        },
    }
    validate_asl(definition)
    return definition


def validate_asl(definition: Any) -> None:
    """Check the structure of an ASL definition. Raises AslError naming the field."""
    if not isinstance(definition, dict):
        raise AslError("definition", f"must be a JSON object, got {type(definition).__name__}")
    states = definition.get("States")
    if not isinstance(states, dict) or not states:
        raise AslError("States", "must be a non-empty object of state name -> state")
    start = definition.get("StartAt")
    if start not in states:
        raise AslError("StartAt", f"{start!r} is not a state", hint=f"states: {sorted(states)}")
    for name, state in states.items():
        _validate_state(f"States.{name}", state, states)


def _validate_state(where: str, state: Any, states: dict[str, Any]) -> None:
    if not isinstance(state, dict):
        raise AslError(where, "must be an object")
    kind = state.get("Type")
    if kind not in STATE_TYPES:
        raise AslError(f"{where}.Type", f"{kind!r} is not a state type", hint=f"one of {sorted(STATE_TYPES)}")
    if kind not in TERMINAL_TYPES:
        has_next, has_end = "Next" in state, state.get("End") is True
        if has_next == has_end:
            raise AslError(where, "needs exactly one of Next or End: true")
    if "Next" in state and state["Next"] not in states:
        raise AslError(f"{where}.Next", f"{state['Next']!r} is not a state")
    if kind == "Task":
        _validate_task(where, state)
    for index, catcher in enumerate(state.get("Catch", [])):
        _validate_error_list(f"{where}.Catch[{index}]", catcher)
        if catcher.get("Next") not in states:
            raise AslError(f"{where}.Catch[{index}].Next", f"{catcher.get('Next')!r} is not a state")
    for index, retrier in enumerate(state.get("Retry", [])):
        _validate_error_list(f"{where}.Retry[{index}]", retrier)


def _validate_task(where: str, state: dict[str, Any]) -> None:
    resource = state.get("Resource")
    if not isinstance(resource, str) or not resource.startswith("arn:"):
        raise AslError(f"{where}.Resource", f"must be an ARN string, got {resource!r}")
    for key in ("TimeoutSeconds", "HeartbeatSeconds"):
        value = state.get(key)
        if value is not None and (not isinstance(value, int) or value <= 0):
            raise AslError(f"{where}.{key}", f"must be a positive integer, got {value!r}")
    timeout, heartbeat = state.get("TimeoutSeconds"), state.get("HeartbeatSeconds")
    if timeout and heartbeat and heartbeat >= timeout:
        raise AslError(f"{where}.HeartbeatSeconds", f"{heartbeat} must be smaller than TimeoutSeconds {timeout}")
    if resource.endswith(".waitForTaskToken") and "$$.Task.Token" not in json.dumps(state.get("Parameters", {})):
        raise AslError(
            f"{where}.Parameters",
            "a .waitForTaskToken task must pass $$.Task.Token to the worker",
            hint='add "TaskToken.$": "$$.Task.Token" (or similar) to the message',
        )


def _validate_error_list(where: str, entry: Any) -> None:
    errors = entry.get("ErrorEquals") if isinstance(entry, dict) else None
    if not isinstance(errors, list) or not errors or not all(isinstance(e, str) for e in errors):
        raise AslError(f"{where}.ErrorEquals", "must be a non-empty list of error names")


def start_execution(sfn: Any, state_machine_arn: str, payload: dict[str, Any]) -> str:
    """Start an execution with a unique name (moto would otherwise name every one "None")."""
    return sfn.start_execution(
        stateMachineArn=state_machine_arn, name=uuid.uuid4().hex, input=json.dumps(payload)
    )["executionArn"]


def wait_for_execution(sfn: Any, execution_arn: str, *, timeout: float = 30.0) -> dict[str, Any]:
    """Poll until the execution leaves RUNNING; raises FleetlabError after ``timeout`` real seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        description = sfn.describe_execution(executionArn=execution_arn)
        if description["status"] != "RUNNING":
            return description
        if time.monotonic() > deadline:
            raise FleetlabError(
                f"execution {execution_arn.rsplit(':', 1)[-1]} still RUNNING after {timeout} s; "
                "it is waiting for a callback or a timer"
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


@dataclass(frozen=True)
class HistoryRow:
    """One event of an execution's history, flattened for a table."""

    id: int
    at: float
    type: str
    detail: str


def history(sfn: Any, execution_arn: str) -> list[HistoryRow]:
    """The execution's history events, oldest first, each with a one-line detail."""
    rows: list[HistoryRow] = []
    paginator = sfn.get_paginator("get_execution_history")
    for page in paginator.paginate(executionArn=execution_arn):
        for event in page["events"]:
            rows.append(
                HistoryRow(
                    id=event["id"],
                    at=event["timestamp"].timestamp(),
                    type=event["type"],
                    detail=_event_detail(event),
                )
            )
    return rows


def _event_detail(event: dict[str, Any]) -> str:
    for key, value in event.items():
        if key.endswith("EventDetails") and isinstance(value, dict):
            if "error" in value:
                return f"{value['error']}: {value.get('cause', '')}"[:160]
            if "name" in value:
                return value["name"]
            if "resourceType" in value:
                return f"{value['resourceType']}:{value.get('resource', '')}"
    return ""


@dataclass(frozen=True)
class CallbackResult:
    """How a callback call ended: ``accepted`` or the error code Step Functions answered."""

    call: str
    accepted: bool
    error_code: str = ""


def send_success(sfn: Any, token: str, output: Any) -> CallbackResult:
    """SendTaskSuccess; a stale or unknown token comes back as a rejected CallbackResult."""
    return _callback("SendTaskSuccess", lambda: sfn.send_task_success(taskToken=token, output=json.dumps(output)))


def send_failure(sfn: Any, token: str, error: str, cause: str = "") -> CallbackResult:
    """SendTaskFailure with an error name the state machine's Catch can route on."""
    return _callback("SendTaskFailure", lambda: sfn.send_task_failure(taskToken=token, error=error, cause=cause))


def send_heartbeat(sfn: Any, token: str) -> CallbackResult:
    """SendTaskHeartbeat: tells Step Functions the worker holding ``token`` is alive."""
    return _callback("SendTaskHeartbeat", lambda: sfn.send_task_heartbeat(taskToken=token))


def _callback(call: str, invoke: Any) -> CallbackResult:
    try:
        invoke()
    except ClientError as exc:
        return CallbackResult(call, False, exc.response["Error"].get("Code", "unknown"))
    return CallbackResult(call, True)
