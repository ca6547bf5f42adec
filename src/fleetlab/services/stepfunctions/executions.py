"""Executions: start one with a unique name, wait for it to end, read its history."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from fleetlab.core.clock import Clock


def start_execution(sfn: Any, state_machine_arn: str, payload: dict[str, Any]) -> str:
    """Start an execution with a unique name (moto would otherwise name every one "None")."""
    return sfn.start_execution(
        stateMachineArn=state_machine_arn, name=uuid.uuid4().hex, input=json.dumps(payload)
    )["executionArn"]


def wait_for_execution(sfn: Any, execution_arn: str, *, clock: Clock, timeout: float = 30.0) -> dict[str, Any]:
    """Poll until the execution leaves RUNNING and return its description.

    Polls on ``clock``'s real-time wait (Step Functions timers run in real
    time on every backend). Raises Timeout after ``timeout`` real seconds:
    the execution is waiting for a callback or a timer and may still end.
    """

    def ended() -> dict[str, Any] | None:
        description = sfn.describe_execution(executionArn=execution_arn)
        return description if description["status"] != "RUNNING" else None

    name = execution_arn.rsplit(":", 1)[-1]
    return clock.wait_until(ended, timeout=timeout, what=f"execution {name}, waiting for a callback or a timer")


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
