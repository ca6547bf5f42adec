"""Redrive: moving parked messages from a DLQ back to their work queue, a canary first.

AWS's managed redrive is ``StartMessageMoveTask``. ``redrive`` tries it
(with ``DestinationArn`` set, since the pipeline's own dead-letters were sent
into the DLQ and have no source queue to go back to) and, where the backend
cannot do it, falls back to what the service does under the hood: the move
loop, ``move`` (receive from the DLQ, send to the queue, delete from the
DLQ). It falls back on exactly the answers the capability probe recognises
as "not implemented" (a Python NotImplementedError from in-process moto, an
HTTP 5xx from a server, asked without retries) and on a move task that ends
FAILED; it never runs the probe itself. Send comes before delete, so a crash
part way can move a message twice but never lose it.

A move task cannot stop after N messages, so ``canary_redrive`` moves its
canary with the move loop, lets the fixed workers process it, stops if any
canary message failed again, and only then redrives the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from botocore.exceptions import ClientError

from fleetlab.backends.backend import Backend, mute_server_traceback
from fleetlab.backends.responses import http_status
from fleetlab.core.errors import InvalidInput, RedriveFailed
from fleetlab.core.status import Status
from fleetlab.services.sqs import messages
from fleetlab.services.sqs.queues import WorkQueue

MOVE_TASK_FEATURE = "sqs.move_task_to_destination"
"""The fidelity table's feature for StartMessageMoveTask with a DestinationArn (what redrive starts)."""

MOVE_HOLD_SECONDS = 60
"""How long the move loop hides a DLQ message between receiving it and deleting it."""


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


class Drained(NamedTuple):
    """What processing redriven messages did: how many were done, how many failed again (back in the DLQ)."""

    done: int
    failed: int


@dataclass(frozen=True)
class CanaryRedrive:
    """A canary redrive: the canary, what processing it did, and the rest (None when the canary failed)."""

    canary: int
    canary_result: Drained
    rest: Redrive | None

    @property
    def stopped(self) -> bool:
        """True when the canary failed again and the rest stayed parked."""
        return self.rest is None

    @property
    def moved(self) -> int:
        return self.canary + (self.rest.moved if self.rest else 0)


def redrive(backend: Backend, queue: WorkQueue, *, limit: int | None = None, timeout: float = 60.0) -> Redrive:
    """Move messages from ``queue``'s DLQ back to ``queue``; at most ``limit`` (by the move loop).

    Tries StartMessageMoveTask (unless ``limit`` is set, which it cannot
    honour) and falls back to the move loop when the backend does not
    implement it or the task ends FAILED. Raises Timeout if a move task is
    still running after ``timeout`` real seconds (it keeps running on the
    service), RedriveFailed if someone cancelled it, and the service's
    ClientError when it refuses the task for another reason (a 4xx: the
    redrive-allow policy, a wrong ARN).
    """
    if limit is not None:
        return Redrive(move(backend, queue, limit=limit), RedriveMethod.RECEIVE_SEND_DELETE)
    moved, reason = _move_task(backend, queue, timeout)
    if not reason:
        return Redrive(moved, RedriveMethod.MOVE_TASK)
    return Redrive(moved + move(backend, queue), RedriveMethod.RECEIVE_SEND_DELETE, reason)


def canary_redrive(
    backend: Backend, queue: WorkQueue, *, canary: int, process: Callable[[], Drained], timeout: float = 60.0
) -> CanaryRedrive:
    """Redrive ``canary`` messages, ``process()`` them, and redrive the rest only if none failed again.

    ``process`` runs the (fixed) workers over ``queue`` until what was moved
    is done or parked again, and says how many of each. Raises InvalidInput
    for a canary under 1; otherwise as ``redrive``.
    """
    if canary < 1:
        raise InvalidInput("canary", f"a canary is at least one message, got {canary}")
    moved = move(backend, queue, limit=canary)
    result = process() if moved else Drained(0, 0)
    if result.failed:
        return CanaryRedrive(moved, result, None)
    return CanaryRedrive(moved, result, redrive(backend, queue, timeout=timeout))


def move(backend: Backend, queue: WorkQueue, *, limit: int | None = None) -> int:
    """The move loop: receive from the DLQ, send to ``queue``, delete from the DLQ; how many moved.

    Moves everything visible, or at most ``limit``, never holding more than
    it will move. Body and message attributes travel; on a FIFO queue the
    message group too, deduplicated on the parked MessageId (a move retried
    after a crash does not enqueue it twice within SQS's 5-minute window).
    """
    moved = 0
    while limit is None or moved < limit:
        wanted = messages.MAX_RECEIVE_BATCH if limit is None else min(messages.MAX_RECEIVE_BATCH, limit - moved)
        batch = messages.receive(backend, queue.dlq_url, max_messages=wanted, visibility_timeout=MOVE_HOLD_SECONDS)
        if not batch:
            break
        moved += _move_batch(backend, queue, batch)
    return moved


def _move_batch(backend: Backend, queue: WorkQueue, batch: list[dict[str, Any]]) -> int:
    """Send then delete each message; if one fails, the ones not yet sent are made visible again."""
    sqs = backend.client("sqs")
    for done, message in enumerate(batch):
        try:
            sqs.send_message(QueueUrl=queue.url, **_resend(message, fifo=queue.url.endswith(".fifo")))
        except Exception:
            messages.release(backend, queue.dlq_url, batch[done:])
            raise
        sqs.delete_message(QueueUrl=queue.dlq_url, ReceiptHandle=message["ReceiptHandle"])
    return len(batch)


def _resend(message: dict[str, Any], *, fifo: bool) -> dict[str, Any]:
    """SendMessage's arguments (besides the queue) that enqueue ``message`` again as it was."""
    request: dict[str, Any] = {"MessageBody": message["Body"]}
    if message.get("MessageAttributes"):
        request["MessageAttributes"] = message["MessageAttributes"]
    if fifo:
        request["MessageGroupId"] = message.get("Attributes", {}).get("MessageGroupId") or "redriven"
        request["MessageDeduplicationId"] = message["MessageId"]
    return request


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
