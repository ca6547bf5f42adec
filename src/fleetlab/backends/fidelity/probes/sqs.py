"""SQS probes: the visibility timeout and redelivery, the redrive receive, stale receipt handles,
StartMessageMoveTask, FIFO deduplication."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.backends.backend import mute_server_traceback
from fleetlab.backends.fidelity.probes.base import Feature, Observation, Probe, register
from fleetlab.backends.fidelity.probes.scratch import Scratch
from fleetlab.backends.responses import error_code, http_status
from fleetlab.core.errors import Timeout

PROBES: list[Probe] = []
"""This service's probes, in the order their findings appear in a table."""

_probes = partial(register, PROBES)


@_probes(
    Feature(
        "sqs.visibility_timeout",
        "A received message stays hidden for the visibility timeout, then comes back",
        aws="hidden until the timeout passes, then redelivered with ApproximateReceiveCount 2",
        workaround="labs 01 and 03 need this contract: run them on moto, moto-server or LocalStack",
    )
)
def _visibility_timeout(scratch: Scratch) -> Observation:
    timeout = scratch.visibility_timeout
    queue = scratch.queue("visibility", VisibilityTimeout=str(timeout))
    scratch.client("sqs").send_message(QueueUrl=queue.url, MessageBody="probe")
    if scratch.receive(queue.url, wait=2) is None:
        return Observation("a message just sent was not received", False)
    scratch.let_pass(timeout - 1)
    if scratch.receive(queue.url, wait=0) is not None:
        return Observation(f"visible again {timeout - 1} s into a {timeout} s timeout", False)
    scratch.let_pass(2)
    late = scratch.receive(queue.url, wait=2)
    if late is None:
        return Observation(f"still hidden {timeout + 1} s after a {timeout} s timeout", False)
    count = _receive_count(late)
    return Observation(
        f"hidden at +{timeout - 1} s, back at +{timeout + 1} s with ApproximateReceiveCount {count}", count == 2
    )


@_probes(
    Feature(
        "sqs.redrive_receive",
        "Receive at which a message is dead-lettered (maxReceiveCount=3)",
        aws="moved after 3 receives: receive 4 no longer gets it from the source, it is in the DLQ",
        workaround="set the app's receive limit one below the receive measured here, not one below an assumed 4",
    )
)
def _redrive_receive(scratch: Scratch) -> Observation:
    timeout = scratch.visibility_timeout
    dlq = scratch.queue("redrive-dlq")
    policy = json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 3})
    source = scratch.queue("redrive", VisibilityTimeout=str(timeout), RedrivePolicy=policy)
    scratch.client("sqs").send_message(QueueUrl=source.url, MessageBody="poison")
    for receive_number in range(1, 7):
        if scratch.receive(source.url, wait=2 if receive_number == 1 else scratch.quiet_wait) is not None:
            scratch.let_pass(timeout + 1)
            continue
        if scratch.receive(dlq.url, wait=2) is None:
            return Observation(f"receive {receive_number} found it in neither the source nor the DLQ", False)
        return Observation(
            f"receive {receive_number} finds it in the DLQ (receives 1-{receive_number - 1} delivered it)",
            receive_number == 4,
        )
    return Observation("still delivered from the source at receive 6: never dead-lettered", False)


@_probes(
    Feature(
        "sqs.redelivery_delay",
        "How soon a message can be received again once its visibility timeout has expired",
        aws="at once: the message is visible again when the timeout expires",
        workaround="never wait exactly the timeout and receive once; long-poll across the expiry "
        "(WaitTimeSeconds of 2 s or more)",
    )
)
def _redelivery_delay(scratch: Scratch) -> Observation:
    # A backend that makes messages visible again on a periodic sweep is late by a different
    # amount for each message: staggering the expiries over one second shows the worst case.
    timeout = scratch.visibility_timeout
    clock = scratch.backend.clock
    queue = scratch.queue("redelivery", VisibilityTimeout=str(timeout))
    for number in range(_REDELIVERY_MESSAGES):
        scratch.client("sqs").send_message(QueueUrl=queue.url, MessageBody=f"probe {number}")
    expires: dict[str, tuple[float, float]] = {}  # the backend starts each timer while its receive is in flight
    for _ in range(_REDELIVERY_MESSAGES):
        sent = clock.now()
        message = scratch.receive(queue.url, wait=2)
        if message is None:
            return Observation("a message just sent was not received", False)
        expires[message["MessageId"]] = (sent + timeout, clock.now() + timeout)
        scratch.let_pass(_REDELIVERY_STAGGER)
    scratch.let_pass(max(0.0, min(first for first, _ in expires.values()) - clock.now() - _REDELIVERY_STEP * 4))
    late: dict[str, tuple[float, float]] = {}  # how late each message came back: at least, at most
    while len(late) < len(expires) and clock.now() < max(last for _, last in expires.values()) + _REDELIVERY_GIVE_UP:
        sent = clock.now()
        message = scratch.receive(queue.url, wait=0)
        if message is None:
            scratch.let_pass(_REDELIVERY_STEP)
        elif message["MessageId"] in expires:
            first, last = expires[message["MessageId"]]
            late.setdefault(message["MessageId"], (sent - last, clock.now() - first))
    if len(late) < len(expires):
        return Observation(f"not receivable again {_REDELIVERY_GIVE_UP:g} s after the timeout expired", False)
    return _redelivered(min(most for _, most in late.values()), max(least for least, _ in late.values()))


def _redelivered(earliest: float, latest: float) -> Observation:
    """``earliest``: the most that the soonest message back can have been late (below zero: early);
    ``latest``: the least that the last one back was late. A slow receive widens neither into a verdict."""
    if earliest < -_REDELIVERY_STEP:
        return Observation(f"early: receivable again {-earliest:.1f} s before the timeout expired", False)
    if latest <= _REDELIVERY_ON_TIME:
        return Observation("at once: receivable again as soon as the timeout expired", True)
    return Observation(f"late: receivable again up to {latest:.1f} s after the timeout expired", False)


_REDELIVERY_MESSAGES = 5
_REDELIVERY_STAGGER = 0.2  # seconds between the receives, so the expiries spread over one second
_REDELIVERY_STEP = 0.05  # seconds between short polls around the expiry
_REDELIVERY_ON_TIME = 0.5  # later than this (well above one poll's round trip) counts as late
_REDELIVERY_GIVE_UP = 10.0


@_probes(
    Feature(
        "sqs.stale_receipt_delete",
        "DeleteMessage with the receipt handle of an earlier receive, after the message was received again",
        aws="succeeds, but the message might not be deleted: only the latest receive's handle is sure to delete it",
        workaround="delete with the latest receive's handle; a worker that lost its message to a redelivery "
        "must expect it back (the idempotency store absorbs it)",
    )
)
def _stale_receipt_delete(scratch: Scratch) -> Observation:
    timeout = scratch.visibility_timeout
    queue = scratch.queue("stale-receipt", VisibilityTimeout=str(timeout))
    sqs = scratch.client("sqs")
    sqs.send_message(QueueUrl=queue.url, MessageBody="probe")
    first = scratch.receive(queue.url, wait=2)
    if first is None:
        return Observation("a message just sent was not received", False)
    scratch.let_pass(timeout + 1)
    if _within(scratch, lambda: scratch.receive(queue.url, wait=1), seconds=5, what="the message again") is None:
        return Observation("the message did not come back after its visibility timeout", False)
    try:
        scratch.delete_message(queue.url, first)
    except ClientError as exc:
        return Observation(f"rejected with {error_code(exc)}: the stale handle is refused", False)
    if _messages_held(sqs, queue.url) == 0:
        return Observation("succeeds and deletes the message", False)
    return Observation("succeeds and leaves the message in the queue", True)


_MOVE_TASK_WORKAROUND = "fleetlab redrives by receive + send + delete, which works on every backend"


@_probes(
    Feature(
        "sqs.move_task_to_source",
        "StartMessageMoveTask without DestinationArn, for a message SQS itself dead-lettered",
        aws="moved back to the queue it was dead-lettered from",
        workaround=_MOVE_TASK_WORKAROUND,
    )
)
def _move_task_to_source(scratch: Scratch) -> Observation:
    timeout = scratch.visibility_timeout
    dlq = scratch.queue("move-back-dlq")
    policy = json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})
    source = scratch.queue("move-back", VisibilityTimeout=str(timeout), RedrivePolicy=policy)
    scratch.client("sqs").send_message(QueueUrl=source.url, MessageBody="poison")
    if scratch.receive(source.url, wait=2) is None:
        return Observation("a message just sent was not received", False)
    scratch.let_pass(timeout + 1)
    scratch.receive(source.url, wait=scratch.quiet_wait)  # the second receive dead-letters it
    if not _within(scratch, lambda: _messages_held(scratch.client("sqs"), dlq.url), seconds=5, what="the DLQ"):
        return Observation("the message was never dead-lettered, so nothing could be moved", False)
    moved = _run_move_task(scratch, dlq.arn, source.url)
    if moved.message is None:
        return Observation(moved.problem, False)
    return Observation(f"moved back to its source; {_receive_count_text(moved.message)}", True)


@_probes(
    Feature(
        "sqs.move_task_to_destination",
        "StartMessageMoveTask with DestinationArn, for a message sent straight into the DLQ",
        aws="moved to the DestinationArn queue (such a message has no source queue to go back to)",
        workaround=_MOVE_TASK_WORKAROUND,
    )
)
def _move_task_to_destination(scratch: Scratch) -> Observation:
    sqs = scratch.client("sqs")
    dlq = scratch.queue("move-dlq")
    policy = json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 3})
    source = scratch.queue("move", RedrivePolicy=policy)
    sqs.send_message(QueueUrl=dlq.url, MessageBody="parked")
    moved = _run_move_task(scratch, dlq.arn, source.url, DestinationArn=source.arn)
    if moved.message is None:
        return Observation(moved.problem, False)
    # Then the same without DestinationArn, on a message of its own (a failed task can leave one in flight).
    sqs.send_message(QueueUrl=dlq.url, MessageBody="parked again")
    without = _run_move_task(scratch, dlq.arn, source.url)
    no_destination = "it went to the source queue" if without.message is not None else without.problem
    return Observation(f"moved to the destination (without DestinationArn: {no_destination})", True)


@dataclass(frozen=True)
class _MoveOutcome:
    """The message a move task delivered, or why there is none."""

    message: dict[str, Any] | None
    problem: str = ""
    implemented: bool = True


def _run_move_task(scratch: Scratch, dlq_arn: str, arrives_in: str, **destination: str) -> _MoveOutcome:
    """Start a move task out of ``dlq_arn``; receive what it moves into ``arrives_in`` (10 s at most)."""
    sqs = scratch.unretried_client("sqs")
    try:
        mute_server_traceback("start_message_move_task")
        handle = sqs.start_message_move_task(SourceArn=dlq_arn, **destination)["TaskHandle"]
    except NotImplementedError:
        return _MoveOutcome(None, "not implemented: the call raises Python NotImplementedError", implemented=False)
    except ClientError as exc:
        if http_status(exc) >= 500:
            return _MoveOutcome(None, f"not implemented: the server answers HTTP {http_status(exc)}", implemented=False)
        return _MoveOutcome(None, f"rejected: {error_code(exc)}")
    arrived = _within(
        scratch, lambda: scratch.receive(arrives_in, wait=1) or _ended_without_moving(sqs, dlq_arn, handle),
        seconds=10, what="the moved message",
    )
    if isinstance(arrived, str) and arrived:
        return _MoveOutcome(None, arrived)
    if not arrived:
        return _MoveOutcome(None, "the task started but the message did not arrive within 10 s")
    return _MoveOutcome(arrived)


def _ended_without_moving(sqs: Any, dlq_arn: str, handle: str) -> str:
    """Why the task ``handle`` ended without moving anything, or "" while that is not so."""
    tasks = sqs.list_message_move_tasks(SourceArn=dlq_arn).get("Results", [])
    # Only a running task lists its handle; the newest comes first.
    task = next((t for t in tasks if t.get("TaskHandle") == handle), tasks[0] if tasks else {})
    if task.get("Status") in ("FAILED", "CANCELLED"):
        return f"the task ended {task['Status']} ({task.get('FailureReason') or 'no reason given'})"
    return ""


def _within(scratch: Scratch, predicate: Any, *, seconds: float, what: str) -> Any:
    """``predicate``'s first truthy value within ``seconds``, or None."""
    try:
        return scratch.wait_until(predicate, seconds=seconds, what=what)
    except Timeout:
        return None


def _receive_count_text(message: dict[str, Any]) -> str:
    count = _receive_count(message)
    if count > 1:
        return f"its receive count carries on (ApproximateReceiveCount {count} at the next receive)"
    return "its receive count starts again (ApproximateReceiveCount 1 at the next receive)"


def _messages_held(sqs: Any, url: str) -> int:
    """Messages in the queue, visible or in flight."""
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return sum(int(attributes.get(name, "0")) for name in names)


@_probes(
    Feature(
        "sqs.fifo_dedup_after_delete",
        "FIFO deduplication id re-sent after the original was received and deleted (within 5 min)",
        aws="dropped: the id is remembered for 5 minutes, also after the original is deleted",
        workaround="FIFO dedup is an ingress convenience; the idempotency table is the real guard (lab 02)",
    )
)
def _fifo_dedup_after_delete(scratch: Scratch) -> Observation:
    queue = scratch.queue("dedup.fifo", FifoQueue="true")
    sqs = scratch.client("sqs")

    def send(body: str) -> None:
        sqs.send_message(QueueUrl=queue.url, MessageBody=body, MessageGroupId="g", MessageDeduplicationId="d1")

    send("original")
    original = scratch.receive(queue.url, wait=2)
    if original is None:
        return Observation("the original message was not received", False)
    scratch.delete_message(queue.url, original)
    send("resent")
    if scratch.receive(queue.url, wait=scratch.quiet_wait) is None:
        return Observation("dropped: the re-sent message was never delivered", True)
    return Observation("accepted again: the re-sent message was delivered", False)


@_probes(
    Feature(
        "sqs.fifo_order_after_return",
        "Three messages of one FIFO message group received together, then back after their visibility timeout",
        aws="the first of the three comes first: a message group keeps its order across redeliveries",
        workaround="fleetlab's FIFO checks judge each batch's response, not the order the backend hands messages back in",
    )
)
def _fifo_order_after_return(scratch: Scratch) -> Observation:
    timeout = scratch.visibility_timeout
    queue = scratch.queue("order.fifo", FifoQueue="true", ContentBasedDeduplication="true", VisibilityTimeout=str(timeout))
    sqs = scratch.client("sqs")
    for body in _FIFO_BODIES:
        sqs.send_message(QueueUrl=queue.url, MessageBody=body, MessageGroupId="g")
    taken = sqs.receive_message(QueueUrl=queue.url, MaxNumberOfMessages=len(_FIFO_BODIES), WaitTimeSeconds=2)
    if [m["Body"] for m in taken.get("Messages", [])] != list(_FIFO_BODIES):
        return Observation("the three messages did not come together, in order, at the first receive", False)
    scratch.let_pass(timeout + 1)
    first = _within(scratch, lambda: scratch.receive(queue.url, wait=1), seconds=5, what="a message of the group")
    if first is None:
        return Observation("none of the three came back after the visibility timeout", False)
    if first["Body"] == _FIFO_BODIES[0]:
        return Observation(f"{_FIFO_BODIES[0]} first: the group's order holds", True)
    return Observation(f"{first['Body']} first: the group's order is lost", False)


_FIFO_BODIES = ("step 1", "step 2", "step 3")


def _receive_count(message: dict[str, Any]) -> int:
    return int(message.get("Attributes", {}).get("ApproximateReceiveCount", "0"))
