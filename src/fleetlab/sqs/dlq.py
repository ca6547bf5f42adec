"""Dead-letter queues: moving parked messages back to work.

AWS's managed redrive is ``StartMessageMoveTask``. ``redrive`` tries it and,
where the backend cannot do it, falls back to what the service does under the
hood: receive from the DLQ, send to the source, delete from the DLQ. It falls
back on exactly the answers the capability probe recognises as "not
implemented" (a Python NotImplementedError from in-process moto, an HTTP 5xx
from a server, asked without retries) and on a move task that ends FAILED;
it never runs the probe itself. Send comes before delete, so a crash part way
can move a message twice but never lose it: a redrive is at-least-once, like
everything else here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from ..aws.backends import Backend, mute_server_traceback
from ..aws.responses import http_status
from ..aws.topology import WorkQueue
from ..errors import RedriveFailed
from ..status import Status
from . import messages

MOVE_TASK_FEATURE = "sqs.move_task_to_destination"
"""The fidelity table's feature for StartMessageMoveTask with a DestinationArn (what redrive starts)."""


class RedriveMethod(Status):
    """How a redrive moved the messages."""

    MOVE_TASK = "StartMessageMoveTask"
    RECEIVE_SEND_DELETE = "receive-send-delete"


@dataclass(frozen=True)
class Redrive:
    """How many messages went back, by which means, and why the fallback was used (if it was)."""

    moved: int
    method: RedriveMethod
    fallback_reason: str = ""


def redrive(backend: Backend, queue: WorkQueue, *, limit: int | None = None, timeout: float = 60.0) -> Redrive:
    """Move messages from ``queue``'s DLQ back to ``queue``; at most ``limit`` (by the fallback).

    Tries StartMessageMoveTask (unless ``limit`` is set, which it cannot
    honour) and falls back to receive-send-delete when the backend does not
    implement it or the task ends FAILED. Raises Timeout if a move task is
    still running after ``timeout`` real seconds (it keeps running on the
    service), RedriveFailed if someone cancelled it, and the service's
    ClientError when it refuses the task for another reason (a 4xx: the
    redrive-allow policy, a wrong ARN).
    """
    if limit is not None:
        return Redrive(_receive_send_delete(backend, queue, limit), RedriveMethod.RECEIVE_SEND_DELETE)
    moved, reason = _move_task(backend, queue, timeout)
    if not reason:
        return Redrive(moved, RedriveMethod.MOVE_TASK)
    return Redrive(moved + _receive_send_delete(backend, queue, None), RedriveMethod.RECEIVE_SEND_DELETE, reason)


def _move_task(backend: Backend, queue: WorkQueue, timeout: float) -> tuple[int, str]:
    """Run a move task to its end: (messages moved, why to fall back; "" when the task did it all)."""
    sqs = backend.unretried_client("sqs")
    try:
        mute_server_traceback("start_message_move_task")
        handle = sqs.start_message_move_task(SourceArn=queue.dlq_arn, DestinationArn=queue.arn)["TaskHandle"]
    except NotImplementedError:
        return 0, "StartMessageMoveTask is not implemented here (NotImplementedError)"
    except ClientError as exc:
        if http_status(exc) >= 500:
            return 0, f"StartMessageMoveTask is not implemented here (HTTP {http_status(exc)})"
        raise
    task = backend.clock.wait_until(
        lambda: _ended(sqs, queue, handle),
        timeout=timeout,
        interval=0.2,
        what=f"the move task {handle} (see ListMessageMoveTasks)",
    )
    moved = int(task.get("ApproximateNumberOfMessagesMoved", 0))
    if task["Status"] == "CANCELLED":
        raise RedriveFailed(f"the move task {handle} was cancelled after moving {moved} messages; redrive again")
    if task["Status"] == "FAILED":
        return moved, f"the move task failed: {task.get('FailureReason') or 'no reason given'}"
    return moved, ""


def _ended(sqs: Any, queue: WorkQueue, handle: str) -> dict[str, Any] | None:
    """The task's description once it has ended, else None."""
    tasks = sqs.list_message_move_tasks(SourceArn=queue.dlq_arn).get("Results", [])
    task = next((t for t in tasks if t.get("TaskHandle") == handle), tasks[0] if tasks else {})
    return task if task.get("Status") in ("COMPLETED", "FAILED", "CANCELLED") else None


def _receive_send_delete(backend: Backend, queue: WorkQueue, limit: int | None) -> int:
    sqs = backend.client("sqs")
    moved = 0
    while limit is None or moved < limit:
        batch = min(messages.MAX_RECEIVE_BATCH, limit - moved) if limit is not None else messages.MAX_RECEIVE_BATCH
        parked = messages.receive(backend, queue.dlq_url, max_messages=batch)
        if not parked:
            break
        for message in parked:
            attributes = message.get("MessageAttributes", {})
            sqs.send_message(
                QueueUrl=queue.url, MessageBody=message["Body"],
                **({"MessageAttributes": attributes} if attributes else {}),
            )
            sqs.delete_message(QueueUrl=queue.dlq_url, ReceiptHandle=message["ReceiptHandle"])
            moved += 1
    return moved
