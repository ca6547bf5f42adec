"""Executions: start one with a unique name, wait for it to end, read its history."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ..errors import FleetlabError


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
