"""Amazon States Language: the orchestrator's definition and validation before create.

The orchestrator dispatches one agent step through the bus with
``events:putEvents.waitForTaskToken``: the execution pauses, the event carries
the task token to a worker through rule and queue, and the worker closes the
loop with ``SendTaskSuccess``. The state machine holds the workflow's
position, never its payload: a step reaches it by ``payload_ref`` only.

Emulators accept much that AWS rejects, so a definition is validated here
before it is created; an error names the state and the field.
"""

from __future__ import annotations

import json
from typing import Any

from ..events import envelope
from ..errors import AslError

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
