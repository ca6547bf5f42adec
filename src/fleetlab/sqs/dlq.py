"""Dead-letter queues: moving parked messages back to work.

AWS's managed redrive is ``StartMessageMoveTask``; where a backend lacks it
(its fidelity table says so), ``redrive`` falls back to what the service does
under the hood: receive from the DLQ, send to the source, delete from the DLQ.
Send comes before delete, so a crash part way can move a message twice but
never lose it: a redrive is at-least-once, like everything else here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..aws.backends import Backend
from ..errors import FleetlabError
from ..aws.topology import WorkQueue

MOVE_TASK_FEATURE = "sqs.move_task_to_destination"  # redrive names its DestinationArn


@dataclass(frozen=True)
class Redrive:
    """How many messages went back, and by which means."""

    moved: int
    method: str  # "StartMessageMoveTask" or "receive-send-delete"


def redrive(backend: Backend, queue: WorkQueue, *, limit: int | None = None, timeout: float = 60.0) -> Redrive:
    """Move messages from ``queue``'s DLQ back to ``queue``; at most ``limit`` with the fallback.

    Uses StartMessageMoveTask where the backend supports it, otherwise the
    receive-send-delete fallback. Raises FleetlabError if a move task does
    not finish within ``timeout`` real seconds (it keeps running on the service).
    """
    from ..fidelity import probe

    if limit is None and not probe(backend).diverges(MOVE_TASK_FEATURE):
        return Redrive(_move_task(backend, queue, timeout), "StartMessageMoveTask")
    return Redrive(_receive_send_delete(backend, queue, limit), "receive-send-delete")


def _move_task(backend: Backend, queue: WorkQueue, timeout: float) -> int:
    sqs = backend.client("sqs")
    before = _depth(sqs, queue.dlq_url)
    handle = sqs.start_message_move_task(SourceArn=queue.dlq_arn, DestinationArn=queue.arn)["TaskHandle"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tasks = sqs.list_message_move_tasks(SourceArn=queue.dlq_arn).get("Results", [])
        task = next((t for t in tasks if t.get("TaskHandle") == handle), tasks[0] if tasks else {})
        if task.get("Status") == "COMPLETED":
            return int(task.get("ApproximateNumberOfMessagesMoved", before))
        if task.get("Status") in ("FAILED", "CANCELLED"):
            raise FleetlabError(f"the move task ended {task['Status']}: {task.get('FailureReason', '')}")
        time.sleep(0.2)
    raise FleetlabError(f"the move task {handle} is still running after {timeout} s; check it with ListMessageMoveTasks")


def _receive_send_delete(backend: Backend, queue: WorkQueue, limit: int | None) -> int:
    sqs = backend.client("sqs")
    moved = 0
    while limit is None or moved < limit:
        batch = min(10, limit - moved) if limit is not None else 10
        with backend.receive_lock(queue.dlq_url):
            messages = sqs.receive_message(
                QueueUrl=queue.dlq_url, MaxNumberOfMessages=batch, MessageAttributeNames=["All"]
            ).get("Messages", [])
        if not messages:
            break
        for message in messages:
            attributes = message.get("MessageAttributes", {})
            sqs.send_message(
                QueueUrl=queue.url, MessageBody=message["Body"],
                **({"MessageAttributes": attributes} if attributes else {}),
            )
            sqs.delete_message(QueueUrl=queue.dlq_url, ReceiptHandle=message["ReceiptHandle"])
            moved += 1
    return moved


def _depth(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])
