"""The callback state machines of lab 04: built as ASL, validated, then created.

``RunStep`` is one Task that sends the step to a token queue with
``sqs:sendMessage.waitForTaskToken``. The message body carries the step's
input and the task token (``$$.Task.Token``); the execution pauses until the
worker that takes the message answers on that token. ``Done`` ends a run
that succeeded; ``Recover`` is where a Catch routes a failed step, with the
error under ``$.error``. A ``chain`` runs several such steps one after another.
"""

from __future__ import annotations

from typing import Any

from fleetlab.backends.resources import Resources
from fleetlab.services.stepfunctions.asl import CALLBACK_SUFFIX, validate_asl

RUN_STATE = "RunStep"
DONE_STATE = "Done"
RECOVER_STATE = "Recover"
TOKEN_FIELD = "task_token"
INPUT_FIELD = "input"
SQS_CALLBACK = f"arn:aws:states:::sqs:sendMessage{CALLBACK_SUFFIX}"


def callback_task(
    queue_url: str,
    *,
    timeout_seconds: int | None = None,
    heartbeat_seconds: int | None = None,
    retry: list[dict[str, Any]] | None = None,
    catch: list[dict[str, Any]] | None = None,
    next_state: str = DONE_STATE,
) -> dict[str, Any]:
    """A Task state that hands the step and its task token to ``queue_url`` and waits for the answer.

    The answer lands under ``$.result``; a timer left as None is left out
    of the state (no TimeoutSeconds: the task may wait for up to a year).
    """
    task: dict[str, Any] = {
        "Type": "Task",
        "Resource": SQS_CALLBACK,
        "Parameters": {
            "QueueUrl": queue_url,
            "MessageBody": {f"{INPUT_FIELD}.$": "$", f"{TOKEN_FIELD}.$": "$$.Task.Token"},
        },
        "ResultPath": "$.result",
        "Next": next_state,
    }
    timers = {"TimeoutSeconds": timeout_seconds, "HeartbeatSeconds": heartbeat_seconds}
    task.update({key: value for key, value in timers.items() if value is not None})
    if retry:
        task["Retry"] = retry
    if catch:
        task["Catch"] = catch
    return task


def callback_definition(
    queue_url: str,
    *,
    timeout_seconds: int | None = None,
    heartbeat_seconds: int | None = None,
    retry: list[dict[str, Any]] | None = None,
    catch: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One callback step: ``RunStep`` -> ``Done``, and ``Recover`` when a Catch routes to it. Validated."""
    states: dict[str, Any] = {
        RUN_STATE: callback_task(
            queue_url, timeout_seconds=timeout_seconds, heartbeat_seconds=heartbeat_seconds, retry=retry, catch=catch
        ),
        DONE_STATE: {"Type": "Succeed"},
    }
    if any(isinstance(c, dict) and c.get("Next") == RECOVER_STATE for c in catch or []):
        states[RECOVER_STATE] = {"Type": "Pass", "End": True}
    definition = {"Comment": "One agent step, answered by a worker on its task token", "StartAt": RUN_STATE,
                  "States": states}
    validate_asl(definition)
    return definition


def chain_definition(queue_url: str, steps: int, *, timeout_seconds: int, heartbeat_seconds: int | None = None) -> dict[str, Any]:
    """``steps`` callback steps in a row (``Step1`` ... ``StepN``), then ``Done``. Validated."""
    names = [f"Step{n}" for n in range(1, steps + 1)]
    states: dict[str, Any] = {
        name: callback_task(queue_url, timeout_seconds=timeout_seconds, heartbeat_seconds=heartbeat_seconds,
                            next_state=following)
        for name, following in zip(names, names[1:] + [DONE_STATE])
    }
    for name in names:
        states[name]["ResultPath"] = f"$.{name}"
    states[DONE_STATE] = {"Type": "Succeed"}
    definition = {"Comment": f"{steps} agent steps in a row", "StartAt": names[0], "States": states}
    validate_asl(definition)
    return definition


def create_machine(resources: Resources, what: str, definition: dict[str, Any], *, role_arn: str) -> str:
    """Validate ``definition`` as AWS would, then create it as a Standard machine named ``prefix + what``.

    Returns the ARN. Raises AslError naming the state and field, before anything is created.
    """
    validate_asl(definition)
    return resources.state_machine(what, definition, role_arn=role_arn)
