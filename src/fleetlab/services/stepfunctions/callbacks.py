"""Callbacks: how a worker holding a task token answers Step Functions.

A rejected callback (a stale or unknown token) is a result, not an exception:
the worker reads ``accepted`` and drops a late answer rather than retrying it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.backends.responses import error_code


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
        return CallbackResult(call, False, error_code(exc))
    return CallbackResult(call, True)
