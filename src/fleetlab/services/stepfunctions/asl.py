"""Amazon States Language: the orchestrator's definition and validation before create.

The orchestrator dispatches one agent step through the bus with
``events:putEvents.waitForTaskToken``: the execution pauses, the event carries
the task token to a worker through rule and queue, and the worker closes the
loop with ``SendTaskSuccess``. The state machine holds the workflow's
position, never its payload: a step reaches it by ``payload_ref`` only.

Emulators accept much that AWS rejects (moto creates a machine whose Next
names no state, whose states cannot be reached, or whose callback task never
passes its token), so a definition is validated here before it is created;
an error names the state and the field (``States.RunStep.Catch[0].Next``).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from typing import Any

from fleetlab.core.errors import AslError
from fleetlab.services.events import envelope

DISPATCH_STATE = "DispatchStep"
TERMINAL_TYPES = {"Choice", "Succeed", "Fail"}
CALLBACK_SUFFIX = ".waitForTaskToken"
ALL_ERRORS = "States.ALL"
TIMEOUT = "States.Timeout"
HEARTBEAT_TIMEOUT = "States.HeartbeatTimeout"
MAX_TIMER_SECONDS = 99_999_999
MAX_STATE_NAME = 80

_COMMON = {"Type", "Comment", "QueryLanguage"}
_FLOW = {"Next", "End"}
_PATHS = {"InputPath", "OutputPath"}
_ERRORS = {"Retry", "Catch"}
_DATA = {"Parameters", "ResultPath", "ResultSelector", "Arguments", "Output", "Assign"}
FIELDS = {
    "Task": _COMMON | _FLOW | _PATHS | _ERRORS | _DATA | {
        "Resource", "TimeoutSeconds", "TimeoutSecondsPath", "HeartbeatSeconds", "HeartbeatSecondsPath", "Credentials"},
    "Pass": _COMMON | _FLOW | _PATHS | {"Result", "Parameters", "ResultPath", "Output", "Assign"},
    "Choice": _COMMON | _PATHS | {"Choices", "Default", "Output", "Assign"},
    "Wait": _COMMON | _FLOW | _PATHS | {"Seconds", "Timestamp", "SecondsPath", "TimestampPath", "Output", "Assign"},
    "Succeed": _COMMON | _PATHS | {"Output"},
    "Fail": _COMMON | {"Error", "Cause", "ErrorPath", "CausePath"},
    "Parallel": _COMMON | _FLOW | _PATHS | _ERRORS | _DATA | {"Branches"},
    "Map": _COMMON | _FLOW | _PATHS | _ERRORS | _DATA | {
        "Iterator", "ItemProcessor", "ItemsPath", "Items", "ItemSelector", "MaxConcurrency", "MaxConcurrencyPath",
        "ItemReader", "ResultWriter", "ItemBatcher", "ToleratedFailureCount", "ToleratedFailureCountPath",
        "ToleratedFailurePercentage", "ToleratedFailurePercentagePath", "Label"},
}
"""The fields AWS accepts on each state type; any other field is rejected at create."""
TOP_LEVEL_FIELDS = {"Comment", "StartAt", "States", "TimeoutSeconds", "Version", "QueryLanguage"}
RETRIER_FIELDS = {"ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate", "MaxDelaySeconds", "JitterStrategy",
                  "Comment"}
CATCHER_FIELDS = {"ErrorEquals", "Next", "ResultPath", "Output", "Assign", "Comment"}


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


def parse_definition(source: Any) -> dict[str, Any]:
    """A definition from JSON text (or a dict, returned as is), validated. Raises AslError naming the field."""
    if isinstance(source, (str, bytes)):
        try:
            source = json.loads(source)
        except json.JSONDecodeError as exc:
            raise AslError("definition", f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    validate_asl(source)
    return source


def validate_asl(definition: Any, *, workflow_type: str = "STANDARD") -> None:
    """Check an ASL definition as AWS does at CreateStateMachine. Raises AslError naming the state and field.

    Checks the fields each state type allows, every transition target,
    that every state can be reached from StartAt, the Retry and Catch
    blocks, the task timers, and that a callback task passes its token.
    ``workflow_type="EXPRESS"`` also rejects callback tasks, which Express
    workflows cannot run.
    """
    _validate_machine("", definition, workflow_type)


def _validate_machine(where: str, definition: Any, workflow_type: str) -> None:
    """Validate a definition or a nested one (a Parallel branch, a Map's processor) at ``where``."""
    prefix = f"{where}." if where else ""
    if not isinstance(definition, dict):
        raise AslError(where or "definition", f"must be a JSON object, got {type(definition).__name__}")
    if not where:
        _reject_unknown("definition", definition, TOP_LEVEL_FIELDS, "the top level of a definition")
        _check_timer(definition, "definition", "TimeoutSeconds")
    states = definition.get("States")
    if not isinstance(states, dict) or not states:
        raise AslError(f"{prefix}States", "must be a non-empty object of state name -> state")
    start = definition.get("StartAt")
    if start not in states:
        raise AslError(f"{prefix}StartAt", f"{start!r} is not a state", hint=f"states: {', '.join(sorted(states))}")
    for name, state in states.items():
        _validate_state(f"{prefix}States.{name}", name, state, states, workflow_type)
    reached = _reachable(start, states)
    for name in states:
        if name not in reached:
            raise AslError(f"{prefix}States.{name}", f"cannot be reached from StartAt {start!r}",
                           hint="no Next, Default, Choice rule or Catch leads to it")


def _validate_state(where: str, name: str, state: Any, states: dict[str, Any], workflow_type: str) -> None:
    if len(name) > MAX_STATE_NAME:
        raise AslError(where, f"a state name may have at most {MAX_STATE_NAME} characters, this one has {len(name)}")
    if not isinstance(state, dict):
        raise AslError(where, "must be an object")
    kind = state.get("Type")
    if kind not in FIELDS:
        raise AslError(f"{where}.Type", f"{kind!r} is not a state type", hint=f"one of {', '.join(sorted(FIELDS))}")
    _reject_unknown(where, state, FIELDS[kind], f"a {kind} state")
    if kind not in TERMINAL_TYPES:
        has_next, has_end = "Next" in state, state.get("End") is True
        if has_next == has_end:
            raise AslError(where, "needs exactly one of Next or End: true")
    for target_field in ("Next", "Default"):
        if target_field in state:
            _check_target(f"{where}.{target_field}", state[target_field], states)
    _check_parameters(f"{where}.Parameters", state.get("Parameters"))
    checks = {"Task": _validate_task, "Choice": _validate_choice, "Wait": _validate_wait}
    if kind in checks:
        checks[kind](where, state, states)
    if kind == "Task" and workflow_type.upper() == "EXPRESS" and str(state.get("Resource", "")).endswith(CALLBACK_SUFFIX):
        raise AslError(f"{where}.Resource", "an Express workflow cannot wait for a task token",
                       hint="use a STANDARD state machine for callback tasks")
    for branch_field, nested in _nested_definitions(state):
        _validate_machine(f"{where}.{branch_field}", nested, workflow_type)
    _validate_retriers(where, state.get("Retry"))
    _validate_catchers(where, state.get("Catch"), states)


def _validate_task(where: str, state: dict[str, Any], states: dict[str, Any]) -> None:
    resource = state.get("Resource")
    if not isinstance(resource, str) or not resource.startswith("arn:"):
        raise AslError(f"{where}.Resource", f"must be an ARN string, got {resource!r}")
    for key in ("TimeoutSeconds", "HeartbeatSeconds"):
        _check_timer(state, where, key)
        if key in state and f"{key}Path" in state:
            raise AslError(f"{where}.{key}Path", f"give {key} or {key}Path, not both")
    timeout, heartbeat = state.get("TimeoutSeconds"), state.get("HeartbeatSeconds")
    if timeout and heartbeat and heartbeat >= timeout:
        raise AslError(f"{where}.HeartbeatSeconds", f"{heartbeat} must be smaller than TimeoutSeconds {timeout}",
                       hint="a heartbeat window as long as the whole task never fires")
    if resource.endswith(CALLBACK_SUFFIX) and "$$.Task.Token" not in json.dumps(state.get("Parameters", {})):
        raise AslError(
            f"{where}.Parameters",
            f"a {CALLBACK_SUFFIX} task must pass $$.Task.Token to the worker",
            hint='add "TaskToken.$": "$$.Task.Token" (or similar) to the message',
        )


def _validate_choice(where: str, state: dict[str, Any], states: dict[str, Any]) -> None:
    choices = state.get("Choices")
    if not isinstance(choices, list) or not choices:
        raise AslError(f"{where}.Choices", "must be a non-empty list of rules")
    for index, rule in enumerate(choices):
        if not isinstance(rule, dict) or "Next" not in rule:
            raise AslError(f"{where}.Choices[{index}]", "each rule needs a Next")
        _check_target(f"{where}.Choices[{index}].Next", rule["Next"], states)


def _validate_wait(where: str, state: dict[str, Any], states: dict[str, Any]) -> None:
    given = [key for key in ("Seconds", "Timestamp", "SecondsPath", "TimestampPath") if key in state]
    if len(given) != 1:
        raise AslError(where, f"a Wait state needs exactly one of Seconds, Timestamp, SecondsPath, TimestampPath; got {given or 'none'}")


def _validate_retriers(where: str, retriers: Any) -> None:
    for index, retrier in enumerate(_entries(f"{where}.Retry", retriers)):
        at = f"{where}.Retry[{index}]"
        _reject_unknown(at, retrier, RETRIER_FIELDS, "a retrier")
        _check_error_list(at, retrier, last=index == len(retriers) - 1)
        _check_number(retrier, at, "IntervalSeconds", minimum=1, integer=True)
        _check_number(retrier, at, "MaxAttempts", minimum=0, integer=True)
        _check_number(retrier, at, "MaxDelaySeconds", minimum=1, integer=True)
        _check_number(retrier, at, "BackoffRate", minimum=1.0, integer=False)
        if retrier.get("JitterStrategy", "NONE") not in ("FULL", "NONE"):
            raise AslError(f"{at}.JitterStrategy", f"must be FULL or NONE, got {retrier['JitterStrategy']!r}")


def _validate_catchers(where: str, catchers: Any, states: dict[str, Any]) -> None:
    for index, catcher in enumerate(_entries(f"{where}.Catch", catchers)):
        at = f"{where}.Catch[{index}]"
        _reject_unknown(at, catcher, CATCHER_FIELDS, "a catcher")
        _check_error_list(at, catcher, last=index == len(catchers) - 1)
        if "Next" not in catcher:
            raise AslError(f"{at}.Next", "a catcher needs a Next: the state that handles the error")
        _check_target(f"{at}.Next", catcher["Next"], states)


def _entries(where: str, value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(entry, dict) for entry in value):
        raise AslError(where, "must be a list of objects", hint='like [{"ErrorEquals": ["States.Timeout"], ...}]')
    return value


def _check_error_list(where: str, entry: dict[str, Any], *, last: bool) -> None:
    errors = entry.get("ErrorEquals")
    if not isinstance(errors, list) or not errors or not all(isinstance(e, str) and e for e in errors):
        raise AslError(f"{where}.ErrorEquals", "must be a non-empty list of error names",
                       hint='like ["States.HeartbeatTimeout", "States.Timeout"]')
    if ALL_ERRORS in errors and len(errors) > 1:
        raise AslError(f"{where}.ErrorEquals", f"{ALL_ERRORS} must appear alone")
    if ALL_ERRORS in errors and not last:
        raise AslError(f"{where}.ErrorEquals", f"an entry on {ALL_ERRORS} must be the last of its list",
                       hint="the entries after it could never match")


def _check_timer(state: dict[str, Any], where: str, key: str) -> None:
    if key in state:
        _check_number(state, where, key, minimum=1, integer=True, maximum=MAX_TIMER_SECONDS)


def _check_number(entry: dict[str, Any], where: str, key: str, *, minimum: float, integer: bool,
                  maximum: float | None = None) -> None:
    if key not in entry:
        return
    value = entry[key]
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        kind = "a whole number" if integer else "a number"
        raise AslError(f"{where}.{key}", f"must be {kind}, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"at least {minimum:g}" if maximum is None else f"between {minimum:g} and {maximum:g}"
        raise AslError(f"{where}.{key}", f"must be {bound}, got {value!r}")


def _check_target(where: str, target: Any, states: dict[str, Any]) -> None:
    if target not in states:
        close = difflib.get_close_matches(str(target), list(states), n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"states: {', '.join(sorted(states))}"
        raise AslError(where, f"{target!r} is not a state", hint=hint)


def _check_parameters(where: str, parameters: Any) -> None:
    """A key ending in ``.$`` takes a path (``$...``, ``$$...``) or an intrinsic (``States.Format(...)``)."""
    if isinstance(parameters, dict):
        for key, value in parameters.items():
            if key.endswith(".$") and not (isinstance(value, str) and value.startswith(("$", "States."))):
                raise AslError(f"{where}.{key}", f"a field ending in .$ takes a path such as \"$.input\", got {value!r}",
                               hint=f"drop the .$ to pass {value!r} as it is")
            _check_parameters(f"{where}.{key}", value)
    elif isinstance(parameters, list):
        for index, item in enumerate(parameters):
            _check_parameters(f"{where}[{index}]", item)


def _reject_unknown(where: str, entry: dict[str, Any], allowed: set[str], what: str) -> None:
    for key in entry:
        if key not in allowed:
            close = difflib.get_close_matches(key, sorted(allowed), n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"allowed: {', '.join(sorted(allowed))}"
            raise AslError(f"{where}.{key}", f"is not a field of {what}", hint=hint)


def _nested_definitions(state: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for index, branch in enumerate(state.get("Branches", []) if state.get("Type") == "Parallel" else []):
        yield f"Branches[{index}]", branch
    for key in ("ItemProcessor", "Iterator"):
        if state.get("Type") == "Map" and key in state:
            yield key, state[key]


def _reachable(start: str, states: dict[str, Any]) -> set[str]:
    seen: set[str] = set()
    frontier = [start]
    while frontier:
        name = frontier.pop()
        if name in seen or name not in states:
            continue
        seen.add(name)
        frontier += list(_successors(states[name]))
    return seen


def _successors(state: dict[str, Any]) -> Iterator[str]:
    for key in ("Next", "Default"):
        if key in state:
            yield state[key]
    for rule in state.get("Choices", []):
        yield rule.get("Next")
    for catcher in state.get("Catch", []):
        yield catcher.get("Next")


UNCATCHABLE = frozenset({"States.DataLimitExceeded", "States.Runtime"})
"""Errors no Retry or Catch matches, not even States.ALL."""


def matches(error_equals: list[str], error: str) -> bool:
    """Whether a Retry or Catch entry with ``ErrorEquals`` matches ``error``, by the ASL rules.

    Names match exactly; States.ALL matches everything catchable;
    States.TaskFailed matches everything catchable but States.Timeout;
    States.Timeout matches States.HeartbeatTimeout too, since AWS's error-name
    reference defines it as a task that ran past TimeoutSeconds *or* failed to
    heartbeat within HeartbeatSeconds.
    """
    if error in UNCATCHABLE:
        return False
    if error in error_equals or ALL_ERRORS in error_equals:
        return True
    if error == HEARTBEAT_TIMEOUT and TIMEOUT in error_equals:
        return True
    return "States.TaskFailed" in error_equals and error != TIMEOUT


def first_match(entries: list[dict[str, Any]] | None, error: str) -> int | None:
    """The index of the first Retry or Catch entry that matches ``error``, or None."""
    for index, entry in enumerate(entries or []):
        if matches(entry.get("ErrorEquals", []), error):
            return index
    return None
